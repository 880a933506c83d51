/// Header field lines rendered once into bytes (each ending in CRLF), for responses whose
/// fixed fields repeat: a cache hit then copies them instead of rendering them again.
public struct RenderedFields: Sendable, Equatable {
    public let bytes: [UInt8]
    /// Whether a `Date` field is among them (the server then adds none).
    public let hasDate: Bool

    public init(_ fields: [(String, String)]) {
        var bytes: [UInt8] = []
        for (name, value) in fields {
            bytes += name.utf8
            bytes += [0x3A, 0x20]
            FieldText.append(value, to: &bytes)
            bytes += [0x0D, 0x0A]
        }
        self.bytes = bytes
        hasDate = fields.contains { HTTPHeaders.namesEqual($0.0, "date") }
    }
}
