#if canImport(Glibc)
import Glibc
#endif

/// Field lines a handler renders for one response, straight into bytes (each line ending
/// in CRLF): the fields that change with every answer (`Age`, `Cache-Status`, a request id)
/// cost no String and no header list per response. The server writes them first, as they
/// are: they are Larder's own values, never text received from a peer.
public struct FieldLines: Sendable {
    @usableFromInline var storage: [UInt8] = []
    public var bytes: [UInt8] { storage }

    public init() {}

    /// Appends `name: value` where `write` appends the value's octets; returns where in
    /// `bytes` the value is, for a reader that wrote it (the access log's request id).
    @inlinable @discardableResult
    public mutating func add(_ name: StaticString, _ write: (inout [UInt8]) -> Void) -> Range<Int> {
        // One allocation for the few lines a response has.
        if storage.isEmpty { storage.reserveCapacity(128) }
        name.withUTF8Buffer { storage.append(contentsOf: $0) }
        storage.append(0x3A)
        storage.append(0x20)
        let start = storage.count
        write(&storage)
        let end = storage.count
        storage.append(0x0D)
        storage.append(0x0A)
        return start..<end
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
        valueOctets(name).map(FieldText.decode)
    }

    /// The octets of the first line named `name` (any case), read in place: no String is
    /// made (the access log reads `Cache-Status` on every answer).
    public func valueOctets(_ name: String) -> ArraySlice<UInt8>? {
        var name = name
        let range = name.withUTF8 { wanted in
            storage.withUnsafeBufferPointer { lines in Self.valueRange(named: wanted, in: lines) }
        }
        return range.map { storage[$0] }
    }

    private static func valueRange(named wanted: UnsafeBufferPointer<UInt8>, in lines: UnsafeBufferPointer<UInt8>) -> Range<Int>? {
        guard let base = lines.baseAddress else { return nil }
        var start = 0
        while start < lines.count {
            // Every line is `name: value\r\n`, as `add` wrote it; its end is found by memchr.
            let end = memchr(base + start, 0x0D, lines.count - start).map { UnsafeRawPointer(base).distance(to: $0) } ?? lines.count
            let colon = start + wanted.count
            // Compared as bytes: no String per name passed.
            if colon + 1 < end, lines[colon] == 0x3A, HTTPHeaders.namesEqual(UnsafeBufferPointer(rebasing: lines[start..<colon]), wanted) {
                return (colon + 2)..<end
            }
            start = end + 2
        }
        return nil
    }
}
