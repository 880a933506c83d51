/// A latitude or longitude as the API accepts it: a plain decimal (`-?digits[.digits]`),
/// range-checked on the value as given, then rounded half away from zero to the configured
/// number of decimals. Done on the decimal digits, so 52.525 rounds to 52.53 exactly as a
/// person would, with no binary floating-point surprises.
struct Coordinate: Equatable, Sendable {
    /// The rounded value as canonical decimal text (`52.52`, `-0.5`, `13`): the cache key
    /// part, the upstream query value and the JSON number in the body.
    let text: String

    enum Problem: Error, Equatable {
        case notANumber
        case outOfRange
    }

    init(parsing raw: Substring, limit: Int, precision: Int) throws(Problem) {
        var bytes = Array(raw.utf8)
        var negative = false
        if bytes.first == 0x2D {  // "-"
            negative = true
            bytes.removeFirst()
        }
        let dot = bytes.firstIndex(of: 0x2E)
        let integer = Array(bytes[..<(dot ?? bytes.endIndex)])
        let fraction = dot.map { Array(bytes[($0 + 1)...]) } ?? []
        guard !integer.isEmpty, integer.count <= 4, integer.allSatisfy(Self.isDigit),
              dot == nil || !fraction.isEmpty, fraction.count <= 20, fraction.allSatisfy(Self.isDigit) else {
            throw .notANumber
        }
        let whole = integer.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        if whole > limit || (whole == limit && fraction.contains { $0 != 0x30 }) { throw .outOfRange }

        // Scaled integer of the kept digits, then round half away from zero on the next digit.
        var scaled = whole
        for i in 0..<precision { scaled = scaled * 10 + (i < fraction.count ? Int(fraction[i] - 0x30) : 0) }
        if precision < fraction.count, fraction[precision] >= 0x35 { scaled += 1 }
        text = Self.render(scaled: scaled, negative: negative, precision: precision)
    }

    private static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    private static func render(scaled: Int, negative: Bool, precision: Int) -> String {
        var digits = String(scaled)
        if precision > 0 {
            while digits.count <= precision { digits = "0" + digits }
            digits.insert(".", at: digits.index(digits.endIndex, offsetBy: -precision))
            while digits.hasSuffix("0") { digits.removeLast() }
            if digits.hasSuffix(".") { digits.removeLast() }
        }
        return negative && scaled != 0 ? "-" + digits : digits
    }
}

/// The `lat` / `lon` query of `/weather` and `/overview`, validated.
struct Place: Equatable, Sendable {
    let latitude: Coordinate
    let longitude: Coordinate

    /// The cache key: the rounded pair, so nearby requests share one entry and one upstream call.
    var key: String { "weather:\(latitude.text),\(longitude.text)" }

    /// Parses `lat` and `lon`, each required exactly once; the error names the bad parameter.
    static func parse(query: Substring?, precision: Int) -> Result<Place, ParameterProblem> {
        var lat: [Substring] = []
        var lon: [Substring] = []
        for pair in (query ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            switch parts[0] {
            case "lat": lat.append(parts.count > 1 ? parts[1] : "")
            case "lon": lon.append(parts.count > 1 ? parts[1] : "")
            default: continue  // unknown parameters are ignored, as most APIs do
            }
        }
        func one(_ name: String, _ values: [Substring], limit: Int) -> Result<Coordinate, ParameterProblem> {
            guard !values.isEmpty else { return .failure(ParameterProblem(name: name, detail: "\(name) is required.")) }
            guard values.count == 1 else { return .failure(ParameterProblem(name: name, detail: "\(name) must be given once.")) }
            do {
                return .success(try Coordinate(parsing: values[0], limit: limit, precision: precision))
            } catch .notANumber {
                return .failure(ParameterProblem(name: name, detail: "\(name) must be a plain decimal number such as 52.52."))
            } catch {
                return .failure(ParameterProblem(name: name, detail: "\(name) must be between -\(limit) and \(limit)."))
            }
        }
        switch (one("lat", lat, limit: 90), one("lon", lon, limit: 180)) {
        case (.failure(let problem), _), (_, .failure(let problem)): return .failure(problem)
        case (.success(let latitude), .success(let longitude)): return .success(Place(latitude: latitude, longitude: longitude))
        }
    }
}

/// A bad or missing query parameter: answered 400 naming it.
struct ParameterProblem: Error, Equatable {
    let name: String
    let detail: String
}
