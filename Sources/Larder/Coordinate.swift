import HTTPServer

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
        // One pass over the UTF-8 bytes, no intermediate arrays: this runs on every request.
        let bytes = raw.utf8
        var i = bytes.startIndex
        var negative = false
        if i < bytes.endIndex, bytes[i] == 0x2D {  // "-"
            negative = true
            i = bytes.index(after: i)
        }
        var whole = 0
        var integerDigits = 0
        while i < bytes.endIndex, Self.isDigit(bytes[i]) {
            guard integerDigits < 4 else { throw .notANumber }
            whole = whole * 10 + Int(bytes[i] - 0x30)
            integerDigits += 1
            i = bytes.index(after: i)
        }
        guard integerDigits > 0 else { throw .notANumber }
        // Scaled integer of the kept digits; the next digit decides rounding, half away from zero.
        var scaled = whole
        var fractionDigits = 0
        var nonZeroFraction = false
        var roundUp = false
        if i < bytes.endIndex {
            guard bytes[i] == 0x2E else { throw .notANumber }
            i = bytes.index(after: i)
            while i < bytes.endIndex {
                let byte = bytes[i]
                guard Self.isDigit(byte), fractionDigits < 20 else { throw .notANumber }
                if fractionDigits < precision { scaled = scaled * 10 + Int(byte - 0x30) }
                if fractionDigits == precision { roundUp = byte >= 0x35 }
                if byte != 0x30 { nonZeroFraction = true }
                fractionDigits += 1
                i = bytes.index(after: i)
            }
            guard fractionDigits > 0 else { throw .notANumber }
        }
        if whole > limit || (whole == limit && nonZeroFraction) { throw .outOfRange }
        for _ in fractionDigits..<max(fractionDigits, precision) { scaled *= 10 }
        if roundUp { scaled += 1 }
        text = Self.render(scaled: scaled, negative: negative, precision: precision)
    }

    private static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    /// `5253`, precision 2 → `52.53`; trailing fractional zeros dropped, `-0` written `0`.
    private static func render(scaled: Int, negative: Bool, precision: Int) -> String {
        var digits: [UInt8] = []
        digits.reserveCapacity(12)
        var rest = scaled
        var position = 0
        var significant = false  // a non-zero fractional digit has been written (writing right to left)
        repeat {
            let digit = UInt8(rest % 10)
            rest /= 10
            if position < precision {
                if digit != 0 || significant {
                    digits.append(0x30 + digit)
                    significant = true
                }
                if position == precision - 1, significant { digits.append(0x2E) }
            } else {
                digits.append(0x30 + digit)
            }
            position += 1
        } while rest > 0 || position <= precision
        if negative, scaled != 0 { digits.append(0x2D) }
        return String(decoding: digits.reversed(), as: UTF8.self)
    }
}

/// The `lat` / `lon` query of `/weather` and `/overview`, validated.
struct Place: Equatable, Sendable {
    let latitude: Coordinate
    let longitude: Coordinate

    /// The resource the weather cache keys on: the rounded pair (`52.52,13.41`), so nearby
    /// requests share one entry and one upstream call.
    var resource: String { latitude.text + "," + longitude.text }

    /// Parses `lat` and `lon`, each required exactly once; the error names every bad parameter.
    static func parse(query: Substring?, precision: Int) -> Result<Place, ParameterProblem> {
        // Scanned on the bytes rather than split into arrays: this runs on every request.
        var lat: [Substring] = []
        var lon: [Substring] = []
        if let query {
            let bytes = query.utf8
            var start = bytes.startIndex
            while start < bytes.endIndex {
                let end = bytes[start...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.endIndex
                let pair = bytes[start..<end]
                let equals = pair.firstIndex(of: UInt8(ascii: "=")) ?? end
                let name = pair[..<equals]
                let value = equals < end ? query[bytes.index(after: equals)..<end] : query[end..<end]
                if name.elementsEqual("lat".utf8) {
                    lat.append(value)
                } else if name.elementsEqual("lon".utf8) {
                    lon.append(value)
                }  // unknown parameters are ignored, as most APIs do
                start = end < bytes.endIndex ? bytes.index(after: end) : end
            }
        }
        func one(_ name: String, _ values: [Substring], limit: Int) -> Result<Coordinate, ProblemDetails.InputError> {
            guard !values.isEmpty else { return .failure(.init(name: name, reason: "\(name) is required.")) }
            guard values.count == 1 else { return .failure(.init(name: name, reason: "\(name) must be given once.")) }
            do {
                return .success(try Coordinate(parsing: values[0], limit: limit, precision: precision))
            } catch .notANumber {
                return .failure(.init(name: name, reason: "\(name) must be a plain decimal number such as 52.52."))
            } catch {
                return .failure(.init(name: name, reason: "\(name) must be between -\(limit) and \(limit)."))
            }
        }
        switch (one("lat", lat, limit: 90), one("lon", lon, limit: 180)) {
        case (.success(let latitude), .success(let longitude)): return .success(Place(latitude: latitude, longitude: longitude))
        case (let latitude, let longitude):
            let errors = [latitude, longitude].compactMap { if case .failure(let error) = $0 { error } else { nil } }
            return .failure(ParameterProblem(errors: errors))
        }
    }
}

/// Bad or missing query parameters: answered 400 listing every one.
struct ParameterProblem: Error, Equatable {
    let errors: [ProblemDetails.InputError]

    var detail: String { errors.map(\.reason).joined(separator: " ") }
}
