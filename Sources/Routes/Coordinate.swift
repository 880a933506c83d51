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
        var raw = raw
        let value = raw.withUTF8 { bytes in Result { () throws(Problem) in try Self.canonical(bytes, limit: limit, precision: precision) } }
        let (scaled, negative) = try value.get()
        text = Self.rendering { Self.render(scaled: scaled, negative: negative, precision: precision, endingAt: $0.count, in: $0) }
    }

    /// A rounded value: the kept digits as one integer (`5253` for 52.53 at precision 2) and its sign.
    typealias Scaled = (scaled: Int, negative: Bool)

    /// One pass over the bytes, no intermediate arrays: this runs on every request.
    fileprivate static func canonical(_ bytes: UnsafeBufferPointer<UInt8>, limit: Int, precision: Int) throws(Problem) -> Scaled {
        var i = 0
        var negative = false
        if i < bytes.count, bytes[i] == 0x2D {  // "-"
            negative = true
            i += 1
        }
        var whole = 0
        var integerDigits = 0
        while i < bytes.count, Self.isDigit(bytes[i]) {
            guard integerDigits < 4 else { throw .notANumber }
            whole = whole * 10 + Int(bytes[i] - 0x30)
            integerDigits += 1
            i += 1
        }
        guard integerDigits > 0 else { throw .notANumber }
        // Scaled integer of the kept digits; the next digit decides rounding, half away from zero.
        var scaled = whole
        var fractionDigits = 0
        var nonZeroFraction = false
        var roundUp = false
        if i < bytes.count {
            guard bytes[i] == 0x2E else { throw .notANumber }
            i += 1
            while i < bytes.count {
                let byte = bytes[i]
                guard Self.isDigit(byte), fractionDigits < 20 else { throw .notANumber }
                if fractionDigits < precision { scaled = scaled * 10 + Int(byte - 0x30) }
                if fractionDigits == precision { roundUp = byte >= 0x35 }
                if byte != 0x30 { nonZeroFraction = true }
                fractionDigits += 1
                i += 1
            }
            guard fractionDigits > 0 else { throw .notANumber }
        }
        if whole > limit || (whole == limit && nonZeroFraction) { throw .outOfRange }
        for _ in fractionDigits..<max(fractionDigits, precision) { scaled *= 10 }
        if roundUp { scaled += 1 }
        return (scaled, negative)
    }

    private static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    /// Text written right to left into a buffer on the stack (a coordinate is at most a
    /// sign, 4 integer digits, a point and 6 decimals), then made a String once: no array per
    /// coordinate, and a pair is one String, not two joined.
    fileprivate static func rendering(_ write: (UnsafeMutableBufferPointer<UInt8>) -> Int) -> String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { buffer in
            let start = write(buffer)
            return String(decoding: UnsafeBufferPointer(rebasing: buffer[start...]), as: UTF8.self)
        }
    }

    /// `5253`, precision 2 → `52.53`, written to end just before `end`; answers where it
    /// starts. Trailing fractional zeros are dropped, `-0` is written `0`.
    fileprivate static func render(scaled: Int, negative: Bool, precision: Int, endingAt end: Int,
                                   in digits: UnsafeMutableBufferPointer<UInt8>) -> Int {
        var end = end
        func put(_ byte: UInt8) {
            precondition(end > 0, "a coordinate longer than its buffer")
            end -= 1
            digits[end] = byte
        }
        var rest = scaled
        var position = 0
        var significant = false  // a non-zero fractional digit has been written
        repeat {
            let digit = UInt8(rest % 10)
            rest /= 10
            if position < precision {
                if digit != 0 || significant {
                    put(0x30 + digit)
                    significant = true
                }
                if position == precision - 1, significant { put(0x2E) }
            } else {
                put(0x30 + digit)
            }
            position += 1
        } while rest > 0 || position <= precision
        if negative, scaled != 0 { put(0x2D) }
        return end
    }
}

/// The `lat` / `lon` query of `/weather` and `/overview`, validated.
struct Place: Equatable, Sendable {
    /// The resource the weather cache keys on: the rounded pair (`52.52,13.41`), so nearby
    /// requests share one entry and one upstream call.
    let resource: String

    /// Parses `lat` and `lon`, each required exactly once; the error names every bad parameter.
    static func parse(query: Substring?, precision: Int) -> Result<Place, ParameterProblem> {
        // Scanned on the raw bytes, remembering where the first `lat` and `lon` values are
        // and how many there were: this runs on every request.
        var query = query ?? ""
        let found = query.withUTF8 { bytes -> Result<Place, ParameterProblem> in
            var lat: (value: Range<Int>?, count: Int) = (nil, 0)
            var lon: (value: Range<Int>?, count: Int) = (nil, 0)
            var start = 0
            while start < bytes.count {
                var end = start
                while end < bytes.count, bytes[end] != UInt8(ascii: "&") { end += 1 }
                // Only `lat=` and `lon=` (or a bare `lat`) matter; unknown parameters are ignored, as most APIs do.
                if end - start >= 3, bytes[start] == UInt8(ascii: "l"), start + 3 == end || bytes[start + 3] == UInt8(ascii: "=") {
                    let value = min(start + 4, end)..<end
                    if bytes[start + 1] == UInt8(ascii: "a"), bytes[start + 2] == UInt8(ascii: "t") {
                        lat = (lat.value ?? value, lat.count + 1)
                    } else if bytes[start + 1] == UInt8(ascii: "o"), bytes[start + 2] == UInt8(ascii: "n") {
                        lon = (lon.value ?? value, lon.count + 1)
                    }
                }
                start = end + 1
            }
            if lat.count == 1, lon.count == 1, let latRange = lat.value, let lonRange = lon.value,
               let latitude = try? Coordinate.canonical(UnsafeBufferPointer(rebasing: bytes[latRange]), limit: 90, precision: precision),
               let longitude = try? Coordinate.canonical(UnsafeBufferPointer(rebasing: bytes[lonRange]), limit: 180, precision: precision) {
                let resource = Coordinate.rendering { text in
                    let comma = Coordinate.render(scaled: longitude.scaled, negative: longitude.negative, precision: precision,
                                                  endingAt: text.count, in: text) - 1
                    text[comma] = UInt8(ascii: ",")
                    return Coordinate.render(scaled: latitude.scaled, negative: latitude.negative, precision: precision, endingAt: comma, in: text)
                }
                return .success(Place(resource: resource))
            }
            func text(_ found: (value: Range<Int>?, count: Int)) -> (value: Substring?, count: Int) {
                (found.value.map { Substring(decoding: UnsafeBufferPointer(rebasing: bytes[$0]), as: UTF8.self) }, found.count)
            }
            return .failure(problem(lat: text(lat), lon: text(lon), precision: precision))
        }
        return found
    }

    /// Every bad parameter of a query that did not give one good `lat` and `lon`.
    private static func problem(lat: (value: Substring?, count: Int), lon: (value: Substring?, count: Int), precision: Int) -> ParameterProblem {
        func error(_ name: String, _ found: (value: Substring?, count: Int), limit: Int) -> ProblemDetails.InputError? {
            guard let value = found.value else { return .init(name: name, reason: "\(name) is required.") }
            guard found.count == 1 else { return .init(name: name, reason: "\(name) must be given once.") }
            do {
                _ = try Coordinate(parsing: value, limit: limit, precision: precision)
                return nil
            } catch .notANumber {
                return .init(name: name, reason: "\(name) must be a plain decimal number such as 52.52.")
            } catch {
                return .init(name: name, reason: "\(name) must be between -\(limit) and \(limit).")
            }
        }
        return ParameterProblem(errors: [error("lat", lat, limit: 90), error("lon", lon, limit: 180)].compactMap { $0 })
    }
}

/// Bad or missing query parameters: answered 400 listing every one.
public struct ParameterProblem: Error, Equatable {
    let errors: [ProblemDetails.InputError]

    public var detail: String { errors.map(\.reason).joined(separator: " ") }
}
