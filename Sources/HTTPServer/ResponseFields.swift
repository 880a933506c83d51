public import HTTPCore

/// Every header field of one response, in one store: the lines added for this response,
/// rendered to bytes as they are added, then the lines a stored answer rendered ahead of
/// time (`shared`), which a hit sends as they are rather than rendering them again.
///
/// Framing and connection management (`Content-Length`, `Transfer-Encoding`, `Connection`,
/// `Keep-Alive`) belong to the server alone: added by name, they are dropped.
public struct ResponseFields: Sendable {
    /// This response's own lines, written first.
    public private(set) var lines = FieldLines()
    /// Lines rendered once for many responses, written after `lines`.
    public var shared: RenderedFields?
    private var addedDate = false

    public init(shared: RenderedFields? = nil) {
        self.shared = shared
    }

    public init(_ headers: HTTPHeaders) {
        for field in headers { add(field.name, field.value) }
    }

    public mutating func add(_ name: String, _ value: String) {
        if Self.belongsToTheServer(name) { return }
        if HTTPHeaders.namesEqual(name, "date") { addedDate = true }
        lines.add(name, value)
    }

    /// Appends `name: value` where `write` appends the value's octets; returns where in
    /// `lines.bytes` the value is (the access log reads back the request id it wrote).
    @discardableResult
    public mutating func add(_ name: StaticString, _ write: (inout [UInt8]) -> Void) -> Range<Int> {
        lines.add(name, write)
    }

    public mutating func add(_ name: StaticString, _ value: Int) {
        lines.add(name, value)
    }

    /// The first value of the field (any case), from this response's lines, then the shared ones.
    public subscript(name: String) -> String? {
        lines.value(name) ?? shared.flatMap { FieldLines.values(named: name, in: $0.bytes).first }
    }

    /// Whether a `Date` is among the fields (the server then adds none).
    var hasDate: Bool { addedDate || shared?.hasDate == true }

    /// Bytes the fields take on the wire.
    var byteCount: Int { lines.bytes.count + (shared?.bytes.count ?? 0) }

    private static func belongsToTheServer(_ name: String) -> Bool {
        HTTPHeaders.namesEqual(name, "content-length") || HTTPHeaders.namesEqual(name, "connection")
            || HTTPHeaders.namesEqual(name, "transfer-encoding") || HTTPHeaders.namesEqual(name, "keep-alive")
    }
}
