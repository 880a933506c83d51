/// One byte range of a stored representation (RFC 9110 §14), for answering a `Range`
/// request from a complete stored response. Only a single range is served; a request for
/// several gets the whole representation, which §14.2 allows.
public struct ByteRange: Equatable, Sendable {
    public let first: Int
    public let last: Int

    public enum Selection: Equatable, Sendable {
        /// No usable single range: send the whole representation (200).
        case whole
        case partial(ByteRange)
        /// A well-formed range that lies outside the representation (416).
        case unsatisfiable
    }

    /// `bytes=a-b`, `bytes=a-` or `bytes=-n` against a representation of `length` bytes.
    public static func select(_ header: String, length: Int) -> Selection {
        let text = header.trimmingOWS()
        guard text.lowercased().hasPrefix("bytes="), !text.contains(",") else { return .whole }
        let spec = text.dropFirst(6).trimmingOWS()
        guard let dash = spec.firstIndex(of: "-") else { return .whole }
        let start = spec[..<dash], end = spec[spec.index(after: dash)...]
        guard start.allSatisfy(\.isASCIIDigit), end.allSatisfy(\.isASCIIDigit), !(start.isEmpty && end.isEmpty) else { return .whole }
        if start.isEmpty {
            // A suffix longer than the representation (however many digits) selects all of it (§14.1.2).
            let suffix = Int(end) ?? Int.max
            guard suffix > 0, length > 0 else { return .unsatisfiable }
            return .partial(ByteRange(first: max(0, length - suffix), last: length - 1))
        }
        guard let first = Int(start) else { return .unsatisfiable }
        guard first < length else { return .unsatisfiable }
        let last = end.isEmpty ? length - 1 : min(Int(end) ?? Int.max, length - 1)
        return last >= first ? .partial(ByteRange(first: first, last: last)) : .whole
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
