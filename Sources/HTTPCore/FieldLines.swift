/// Field lines a handler renders for one response, straight into bytes (each line ending
/// in CRLF): the fields that change with every answer (`Age`, `Cache-Status`, a request id)
/// cost no String and no header list per response. The server writes them first, as they
/// are: they are Larder's own values, never text received from a peer.
public struct FieldLines: Sendable {
    @usableFromInline var storage: [UInt8] = []
    public var bytes: [UInt8] { storage }

    public init() {}

    /// Appends `name: value` where `write` appends the value's octets.
    @inlinable
    public mutating func add(_ name: StaticString, _ write: (inout [UInt8]) -> Void) {
        // One allocation for the few lines a response has.
        if storage.isEmpty { storage.reserveCapacity(128) }
        name.withUTF8Buffer { storage.append(contentsOf: $0) }
        storage.append(0x3A)
        storage.append(0x20)
        write(&storage)
        storage.append(0x0D)
        storage.append(0x0A)
    }

    @inlinable
    public mutating func add(_ name: StaticString, _ value: String) {
        add(name) { FieldText.append(value, to: &$0) }
    }

    @inlinable
    public mutating func add(_ name: StaticString, _ value: Int) {
        add(name) { DecimalText.append(value, to: &$0) }
    }

    /// The value of the first line named `name` (any case), for readers such as an access log.
    public func value(_ name: String) -> String? {
        var name = name
        return name.withUTF8 { wanted in
            storage.withUnsafeBufferPointer { lines in
                var start = 0
                while start < lines.count {
                    guard let colon = lines[start...].firstIndex(of: 0x3A), let end = lines[colon...].firstIndex(of: 0x0D) else { return nil }
                    // Compared as bytes, as `HTTPHeaders.namesEqual` compares: no String per name passed.
                    if colon - start == wanted.count, (0..<wanted.count).allSatisfy({ lines[start + $0] | 0x20 == wanted[$0] | 0x20 }) {
                        return FieldText.decode(storage[(colon + 2)..<end])
                    }
                    start = end + 2
                }
                return nil
            }
        }
    }
}
