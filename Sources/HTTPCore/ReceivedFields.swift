/// The header section of an upstream's response, collected line by line as it arrives
/// (libcurl hands over each raw line) and checked before anything is relayed or stored.
///
/// RFC 9112 §5 and §6.3: a field name must be a token; a value may not hold CR, LF, NUL or
/// other controls (obs-text is kept as octets, `FieldText`); obs-fold is replaced by one
/// space (§5.2); several `Content-Length` values must agree. libcurl is more lenient than
/// that, and what it tolerates would otherwise be served to clients and kept on disk.
public struct ReceivedFields: Sendable {
    /// The fields of the latest response head, in order, repeats kept.
    public private(set) var fields: HTTPHeaders = []
    /// Why the head is unusable; once set, the answer must not be relayed or stored.
    public private(set) var violation: String?
    /// Informational responses received before the latest head that a gateway passes on
    /// (`InterimResponse.isRelayed`), at most `maxInterim` of them.
    public private(set) var interim: [InterimResponse] = []
    private var contentLength: [UInt8]?
    /// The status of the latest head, 0 until a status line is read.
    private var status = 0

    public static let maxInterim = 8

    /// The status of the latest head, 0 until a status line is read.
    public var latestStatus: Int { status }
    /// The latest head's `Content-Length`, when it states one (nil also past `Int`).
    public var declaredLength: Int? { contentLength.flatMap { Int(String(decoding: $0, as: UTF8.self)) } }

    /// More fields than any honest response carries.
    public static let maxFields = 256

    public init() {}

    /// Takes one raw line as received, its CRLF (or bare LF) included. A status line starts
    /// a new head (after a 1xx or a redirect); the blank line ends one. Read as a buffer of
    /// bytes, not a slice of raw bytes: every check below is then a plain loop, and a
    /// pass-through miss's head costs 7,300 instructions against 11,900 through slices
    /// (gate path pass-through-miss).
    public mutating func add(line raw: UnsafeRawBufferPointer) {
        guard violation == nil else { return }
        // Bytes as libcurl hands them over (`char`): UInt8 may alias them.
        var line = raw.assumingMemoryBound(to: UInt8.self)
        var end = line.count
        if end > 0, line[end - 1] == 0x0A { end -= 1 }
        if end > 0, line[end - 1] == 0x0D { end -= 1 }
        if end == 0 { return }
        line = UnsafeBufferPointer(rebasing: line[..<end])
        if line.first == UInt8(ascii: "H"), line.starts(with: "HTTP/".utf8) {
            if InterimResponse.isRelayed(status), interim.count < Self.maxInterim {
                interim.append(InterimResponse(status: status, headers: HopByHop.removed(from: fields)))
            }
            status = Self.statusCode(line)
            fields.removeAll()
            contentLength = nil
            return
        }
        if line.first == 0x20 || line.first == 0x09 {
            // obs-fold: the continuation joins the previous value after one space.
            guard !fields.isEmpty else { return fail("a header section starts with a continuation line") }
            let continuation = trimmed(line)
            guard FieldSyntax.isValue(continuation) else { return fail("a folded field value holds a control character") }
            let last = fields.count - 1
            fields[last].value += (fields[last].value.isEmpty ? "" : " ") + FieldText.decode(continuation)
            return
        }
        guard let colon = line.firstIndex(of: 0x3A) else { return fail("a header line has no colon") }
        let name = UnsafeBufferPointer(rebasing: line[..<colon])
        guard FieldSyntax.isToken(name) else { return fail("a field name is not a token") }
        let value = trimmed(UnsafeBufferPointer(rebasing: line[(colon + 1)...]))
        guard FieldSyntax.isValue(value) else { return fail("a field value holds CR, LF, NUL or another control character") }
        guard fields.count < Self.maxFields else { return fail("more than \(Self.maxFields) header fields") }
        let nameText = String(decoding: name, as: UTF8.self)
        if HTTPHeaders.namesEqual(nameText, "content-length") {
            // RFC 9112 §6.3: a list of identical values is one value; different ones conflict.
            for member in value.split(separator: 0x2C, omittingEmptySubsequences: false) {
                let length = trimmed(UnsafeBufferPointer(rebasing: member))
                guard !length.isEmpty, length.allSatisfy(FieldSyntax.isDigit) else { return fail("Content-Length is not a number") }
                if let known = contentLength, !known.elementsEqual(length) { return fail("Content-Length values conflict") }
                contentLength = Array(length)
            }
        }
        // Room for a usual head at once, rather than growing through 1, 2, 4 and 8.
        if fields.isEmpty { fields.reserveCapacity(12) }
        fields.add(nameText, FieldText.decode(value))
    }

    /// The three digits after `HTTP/x.y `, 0 when they are not there.
    private static func statusCode(_ line: UnsafeBufferPointer<UInt8>) -> Int {
        let digits = line.dropFirst(9).prefix(3)
        guard digits.count == 3, digits.allSatisfy(FieldSyntax.isDigit) else { return 0 }
        return digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    /// Whether the final status may be relayed: 200–599 (RFC 9110 §15; a 1xx is never final).
    public static func isFinalStatus(_ status: Int) -> Bool { (200...599).contains(status) }

    private mutating func fail(_ reason: String) { violation = reason }

    private func trimmed(_ bytes: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        var start = 0, end = bytes.count
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return UnsafeBufferPointer(rebasing: bytes[start..<end])
    }
}
