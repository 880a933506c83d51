import Foundation
import HTTPCore
import Bodies

/// Parsers for the value syntaxes of the settings: sizes (a whole number of bytes, or with
/// `B`, `KiB`, `MiB`, `GiB`) and durations (whole seconds, or with `ms`, `s`, `m`, `h`).
enum SettingValues {
    /// A whole number of bytes, or with `B`, `KiB`, `MiB`, `GiB`.
    static func bytes(_ text: String) -> Int? {
        let units: [(String, Int)] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10), ("B", 1)]
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            return wholeNumber(String(text.dropLast(suffix.count))).flatMap { $0.multipliedReportingOverflow(by: factor) }
                .flatMap { $0.overflow ? nil : $0.partialValue }
        }
        return wholeNumber(text)
    }

    /// Whole seconds, or with `us`, `ms`, `s`, `m`, `h`. Never negative.
    static func duration(_ text: String) -> Duration? {
        let units: [(String, Int64)] = [("us", 1), ("ms", 1000), ("s", 1_000_000), ("m", 60_000_000), ("h", 3_600_000_000)]
        for (suffix, microseconds) in units where text.hasSuffix(suffix) {
            guard let n = wholeNumber(String(text.dropLast(suffix.count))), Int64(n) < Int64.max / microseconds else { return nil }
            return .microseconds(Int64(n) * microseconds)
        }
        return wholeNumber(text).map { .seconds($0) }
    }

    /// Requests in flight to one upstream, top-level or a route's.
    static let upstreamConcurrencyRange = 1...1024
    /// A request body limit, top-level or a route's.
    static let requestBodyRange = 1...(1 << 30)
    /// The largest answer stored, top-level or a route's: up to the most Larder takes of one answer.
    static let objectSizeRange = 1024...HeldAnswer.largestSpooled

    static func upstreamConcurrency(_ text: String) -> Int? {
        Int(text).flatMap { upstreamConcurrencyRange.contains($0) ? $0 : nil }
    }

    static func requestBodyLimit(_ text: String) -> Int? {
        bytes(text).flatMap { requestBodyRange.contains($0) ? $0 : nil }
    }

    static func objectSizeLimit(_ text: String) -> Int? {
        bytes(text).flatMap { objectSizeRange.contains($0) ? $0 : nil }
    }

    /// A size as a setting is written: in the largest unit that divides it (`1GiB`, `1B`).
    static func sizeText(_ bytes: Int) -> String {
        for (suffix, factor) in [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] where bytes >= factor && bytes % factor == 0 {
            return "\(bytes / factor)\(suffix)"
        }
        return "\(bytes)B"
    }

    /// The durations a setting takes.
    enum DurationRange {
        case any
        case aboveZero
        case within(ClosedRange<Duration>)

        func contains(_ duration: Duration) -> Bool {
            switch self {
            case .any: true
            case .aboveZero: duration > .zero
            case .within(let range): range.contains(duration)
            }
        }

        /// What a value must be, as a problem says it.
        var expects: String {
            switch self {
            case .any: "a duration (seconds, or with us, ms, s, m, h)"
            case .aboveZero: "a duration above zero"
            case .within(let range): "a duration from \(Self.text(range.lowerBound)) to \(Self.text(range.upperBound))"
            }
        }

        /// `1ms`, `60s`: whole milliseconds below a second, else whole seconds.
        private static func text(_ duration: Duration) -> String {
            duration < .seconds(1) ? "\(duration.components.attoseconds / 1_000_000_000_000_000)ms" : "\(duration.components.seconds)s"
        }
    }

    private static func wholeNumber(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 15, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text)
    }

    /// A plain decimal number from 0 to 1 (`0.05`, `1`): no sign, exponent or `nan`.
    static func ratio(_ text: String) -> Double? {
        guard !text.isEmpty, text.utf8.count <= 20, text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E }),
              let value = Double(text), (0...1).contains(value) else { return nil }
        return value
    }

    /// An `http` or `https` URL with a host.
    static func isHTTPURL(_ text: String) -> Bool {
        guard let scheme = WebScheme.authorityStart(text) else { return false }
        let rest = text.dropFirst(scheme)
        let host = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        return !host.isEmpty && !text.contains(" ") && !host.hasPrefix(":")
    }

    /// A path to a regular file this process can read.
    static func readableFile(_ path: String) -> String? {
        var isDirectory: ObjCBool = false
        guard !path.isEmpty, FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
              FileManager.default.isReadableFile(atPath: path) else { return nil }
        return path
    }

    /// The token a file holds (surrounding white space, such as a final newline, dropped):
    /// nil unless it is 1 to 4096 visible ASCII characters, which is what a bearer token
    /// can carry (RFC 6750 §2.1).
    static func token(inFile path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path), data.count <= 8192 else { return nil }
        let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...4096).contains(token.utf8.count), token.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else { return nil }
        return token
    }
}

extension Duration {
    public var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
