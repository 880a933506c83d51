
/// Header fields in the order received or to be sent.
///
/// Repeated fields are kept (a cache needs every `Cache-Control` line, a proxy every
/// `Set-Cookie`), and names compare case-insensitively (RFC 9110 §5.1).
public struct HTTPHeaders: Sendable, Equatable, RandomAccessCollection, MutableCollection, RangeReplaceableCollection,
    ExpressibleByArrayLiteral {
    public typealias Element = (name: String, value: String)

    @usableFromInline var fields: [Element]

    public init() { fields = [] }

    public init(_ fields: [(String, String)]) {
        self.fields = fields.map { (name: $0.0, value: $0.1) }
    }

    public init(fields: [Element]) { self.fields = fields }

    public init(arrayLiteral fields: (String, String)...) { self.init(fields) }

    public var startIndex: Int { 0 }
    public var endIndex: Int { fields.count }
    public subscript(position: Int) -> Element {
        get { fields[position] }
        set { fields[position] = newValue }
    }


    public mutating func replaceSubrange<C: Collection<Element>>(_ range: Range<Int>, with new: C) {
        fields.replaceSubrange(range, with: new)
    }

    public mutating func add(_ name: String, _ value: String) {
        fields.append((name: name, value: value))
    }

    // RangeReplaceableCollection's own `append` and `filter` go through `replaceSubrange`
    // once per field, a generic call each: a forwarded answer's fields cost several times
    // their copy that way.
    public mutating func append(_ field: Element) {
        fields.append(field)
    }

    public func filter(_ isIncluded: (Element) throws -> Bool) rethrows -> HTTPHeaders {
        var kept: [Element] = []
        kept.reserveCapacity(fields.count)
        for field in fields where try isIncluded(field) { kept.append(field) }
        return HTTPHeaders(fields: kept)
    }

    /// Replaces every field of this name with one.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        fields.append((name: name, value: value))
    }

    public mutating func remove(_ name: String) {
        fields.removeAll { HTTPHeaders.namesEqual($0.name, name) }
    }

    /// The first value of the field, if present.
    public subscript(name: String) -> String? {
        index(of: name, from: 0).map { fields[$0].value }
    }

    /// Every value of the field, in order.
    public func values(_ name: String) -> [String] {
        var found: [String] = []
        var next = index(of: name, from: 0)
        while let i = next {
            found.append(fields[i].value)
            next = index(of: name, from: i + 1)
        }
        return found
    }

    /// The position of the first field named `name` at or after `start`. Every request asks
    /// for several fields it does not have: names are read in place (a copied field costs
    /// two retains and two releases) and most differ from `name` in length alone.
    @inlinable
    func index(of name: String, from start: Int) -> Int? {
        let length = name.utf8.count
        var i = start
        while i < fields.count {
            if fields[i].name.utf8.count == length, Self.sameLetters(fields[i].name, name) { return i }
            i += 1
        }
        return nil
    }

    public mutating func reserveCapacity(_ n: Int) { fields.reserveCapacity(n) }

    public func contains(_ name: String) -> Bool { self[name] != nil }

    /// The comma-separated members of every field of this name (RFC 9110 §5.6.1), trimmed, empties dropped.
    public func listValues(_ name: String) -> [Substring] {
        values(name).flatMap { $0.listMembers() }
    }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
    }

    /// ASCII case-insensitive comparison without allocating.
    @inlinable @inline(__always)
    public static func namesEqual(_ a: String, _ b: String) -> Bool {
        // Most names asked about differ in length: no copy, no scan, no call.
        a.utf8.count == b.utf8.count && sameLetters(a, b)
    }

    /// Whether `name` is one of `names`, in any case: no lower-cased copy of it, and no hashing.
    @inlinable
    public static func name(_ name: String, isOneOf names: some Sequence<String>) -> Bool {
        names.contains { namesEqual(name, $0) }
    }

    /// `namesEqual` for names of the same length.
    @usableFromInline
    static func sameLetters(_ a: String, _ b: String) -> Bool {
        var a = a, b = b
        return a.withUTF8 { x in b.withUTF8 { y in namesEqual(x, y) } }
    }

    /// `namesEqual` on raw bytes, for readers that have no String: the request parser and
    /// rendered field lines.
    @inlinable
    public static func namesEqual(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Bool {
        guard x.count == y.count else { return false }
        for i in 0..<x.count where !sameLetter(x[i], y[i]) {
            return false
        }
        return true
    }

    /// Two bytes of a name are the same when equal, or the same ASCII letter in either case.
    /// Only letters: `^` and `~` (both token characters) also differ by 0x20 alone.
    @inlinable @inline(__always)
    static func sameLetter(_ x: UInt8, _ y: UInt8) -> Bool {
        x == y || (x | 0x20 == y | 0x20 && (x | 0x20) &- 0x61 < 26)
    }
}
