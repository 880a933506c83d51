#if canImport(Glibc)
import Glibc
#endif

/// Field lines rendered straight into bytes as they are added (each line ending in CRLF):
/// the fields that change with every answer (`Age`, `Cache-Status`, a request id) cost no
/// String and no header list per response. Values are written as the octets their text
/// stands for (`FieldText`). Measured (`larder-bench pieces`): `Age` and `Cache-Status` in
/// 144–183 ns against 327–410 ns as a list of `String` pairs rendered after.
public struct FieldLines: Sendable {
    @usableFromInline var storage: [UInt8] = []
    public var bytes: [UInt8] { storage }

    public init() {}

    /// Appends `name: value` where `write` appends the value's octets; returns where in
    /// `bytes` the value is, for a reader that wrote it (the access log's request id).
    @inlinable @discardableResult
    public mutating func add(_ name: StaticString, _ write: (inout [UInt8]) -> Void) -> Range<Int> {
        name.withUTF8Buffer { add(name: $0, write) }
    }

    /// Appends `name: value` for a name known only at run time (a problem's `Retry-After`,
    /// a field of an origin's).
    public mutating func add(_ name: String, _ value: String) {
        var name = name
        _ = name.withUTF8 { add(name: $0) { FieldText.append(value, to: &$0) } }
    }

    @inlinable @discardableResult
    mutating func add(name: UnsafeBufferPointer<UInt8>, _ write: (inout [UInt8]) -> Void) -> Range<Int> {
        // One allocation for the few lines a response has.
        if storage.isEmpty { storage.reserveCapacity(128) }
        storage.append(contentsOf: name)
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
        var name = name
        let range = name.withUTF8 { wanted in storage.withUnsafeBufferPointer { Self.valueRange(named: wanted, in: $0) } }
        return range.map { FieldText.decode(storage[$0]) }
    }

    /// The value of the first line of each of `names` (any case), passed to `found` with the
    /// name's place in `names`, all in one pass over the lines: the access line reads three
    /// fields of every answer, and a scan per field cost 1,960 instructions per logged hit
    /// (gate path memory-hit-logged).
    public func firstValues(named names: [StaticString], _ found: (_ name: Int, _ value: String) -> Void) {
        precondition(names.count <= 64, "one bit per name")
        var missing: UInt64 = names.count == 64 ? .max : (1 << names.count) - 1
        storage.withUnsafeBufferPointer { lines in
            Self.forEachLine(in: lines) { name, value in
                for place in names.indices where missing & (1 << place) != 0 && names[place].utf8CodeUnitCount == name.count {
                    let wanted = UnsafeBufferPointer(start: names[place].utf8Start, count: name.count)
                    guard HTTPHeaders.namesEqual(name, wanted) else { continue }
                    missing &= ~(1 << place)
                    found(place, FieldText.decode(lines[value]))
                }
                return missing != 0
            }
        }
    }

    /// The values of every line named `name` (any case) in `lines`, lines as `add` writes
    /// them (`RenderedFields` too).
    public static func values(named name: String, in lines: [UInt8]) -> [String] {
        var name = name
        return name.withUTF8 { wanted in
            lines.withUnsafeBufferPointer { lines in
                var found: [String] = []
                forEachLine(in: lines) { name, value in
                    if HTTPHeaders.namesEqual(name, wanted) { found.append(FieldText.decode(lines[value])) }
                    return true
                }
                return found
            }
        }
    }

    private static func valueRange(named wanted: UnsafeBufferPointer<UInt8>, in lines: UnsafeBufferPointer<UInt8>) -> Range<Int>? {
        var found: Range<Int>?
        forEachLine(in: lines) { name, value in
            if HTTPHeaders.namesEqual(name, wanted) { found = value }
            return found == nil
        }
        return found
    }

    /// Each line's name and where its value is, in order, while `body` answers true. Every
    /// line is `name: value\r\n`, as `add` wrote it; its end and colon are found by memchr.
    private static func forEachLine(in lines: UnsafeBufferPointer<UInt8>, _ body: (_ name: UnsafeBufferPointer<UInt8>, _ value: Range<Int>) -> Bool) {
        guard let base = lines.baseAddress else { return }
        func find(_ byte: UInt8, from start: Int, before end: Int) -> Int? {
            memchr(base + start, Int32(byte), end - start).map { UnsafeRawPointer(base).distance(to: $0) }
        }
        var start = 0
        while start < lines.count {
            let end = find(0x0D, from: start, before: lines.count) ?? lines.count
            if let colon = find(0x3A, from: start, before: end), colon + 1 < end,
               !body(UnsafeBufferPointer(rebasing: lines[start..<colon]), (colon + 2)..<end) { return }
            start = end + 2
        }
    }
}
