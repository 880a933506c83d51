import HTTPCore

/// A strict reader of one JSON document (RFC 8259) into a small tree, for the upstream
/// formats. It replaces `JSONDecoder` on the miss path, where decoding a 300-byte answer
/// cost about 100,000 instructions, a fifth of the whole miss.
///
/// Upstream bytes are outside input: the whole document must be valid JSON (nothing but
/// whitespace after it), strings valid UTF-8 with valid escapes, nesting at most
/// `maxDepth` deep, so no answer can exhaust the stack.
enum JSONValue: Equatable {
    case object([(key: String, value: JSONValue)])
    case array([JSONValue])
    case string(String)
    /// The number's text, checked against JSON's grammar; read with `double` or `integer`.
    case number(String)
    case bool(Bool)
    case null

    static let maxDepth = 64

    static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.object(let x), .object(let y)): x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        case (.array(let x), .array(let y)): x == y
        case (.string(let x), .string(let y)): x == y
        case (.number(let x), .number(let y)): x == y
        case (.bool(let x), .bool(let y)): x == y
        case (.null, .null): true
        default: false
        }
    }

    /// The document in `bytes`, or nil when it is not one valid JSON value. Every byte is
    /// checked; only what `keeping` names is built into the tree.
    static func parse(_ bytes: [UInt8], keeping: JSONKeep = .whole) -> JSONValue? {
        bytes.withUnsafeBufferPointer { buffer in
            var reader = JSONReader(bytes: buffer)
            reader.skipWhitespace()
            guard let value = reader.value(depth: 0, keep: keeping) else { return nil }
            reader.skipWhitespace()
            return reader.position == buffer.count ? value : nil
        }
    }

    /// The value under `key` in an object; the first, when a key repeats.
    subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    var double: Double? {
        guard case .number(let text) = self, let value = Double(text), value.isFinite else { return nil }
        return value
    }

    /// The number as `Double.description` writes it (`12.3`, `12.0`, `1e-05`); nil when it is
    /// not a finite number. A short plain decimal (`-12.3`, `7`, at most 15 digits, no
    /// exponent, no trailing zero after the point) is already that text and is copied: reading
    /// it into a Double and printing that touched more code on a cold miss than the rest of
    /// the weather body.
    var doubleText: String? {
        guard case .number(let text) = self else { return nil }
        if let plain = Self.plainDecimal(text) { return plain }
        guard let value = Double(text), value.isFinite else { return nil }
        return value.description
    }

    /// `text` as `Double.description` would write it, when that is certain without parsing:
    /// `-?(0|[1-9][0-9]{0,8})(\.[0-9]{0,5}[1-9])?`, zero or not below 0.001 in size, so at most 15
    /// significant digits (they survive a Double unchanged) and inside the range Swift
    /// writes without an exponent. Without a fraction, Swift adds `.0`.
    static func plainDecimal(_ text: String) -> String? {
        var bytes = text.utf8[...]
        if bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        let whole = bytes.prefix(while: FieldSyntax.isDigit)
        guard (1...9).contains(whole.count), whole.count == 1 || whole.first != 0x30 else { return nil }
        let rest = bytes[whole.endIndex...]
        if rest.isEmpty { return text + ".0" }
        let fraction = rest.dropFirst()
        guard rest.first == UInt8(ascii: "."), (1...6).contains(fraction.count),
              fraction.allSatisfy(FieldSyntax.isDigit), fraction.last != 0x30 else { return nil }
        // 0.000x and smaller: Swift may write an exponent.
        if whole.first == 0x30, fraction.prefix(3).allSatisfy({ $0 == 0x30 }) { return nil }
        return text
    }

    /// A number that is an exact integer (`3`, `3.0` and `3e0` alike, as `JSONDecoder` reads them).
    var integer: Int? {
        guard case .number(let text) = self else { return nil }
        return Int(text) ?? Double(text).flatMap { Int(exactly: $0) }
    }

    var string: String? {
        guard case .string(let text) = self else { return nil }
        return text
    }
}

/// What of a document `JSONValue.parse` builds. A format that reads three members of a
/// 350-byte answer need not make a String, an array and a tree node for every other one:
/// those are checked as strictly and then dropped (a fifth less of the weather answer's
/// parse, and none of the frees of what it used to build).
indirect enum JSONKeep: Sendable {
    /// The value and everything in it.
    case whole
    /// Of an object, only these members (each as its own `JSONKeep` says); a value that is
    /// not an object is kept whole, so a format can still refuse it for its type.
    case members([(key: [UInt8], keep: JSONKeep)])
    /// Checked, not built (the reader's own use, for what `members` leaves out).
    case nothing

    static func members(_ members: KeyValuePairs<String, JSONKeep>) -> JSONKeep {
        .members(members.map { (Array($0.key.utf8), $0.value) })
    }

    /// What to keep of the member named by these bytes.
    fileprivate func member(_ key: UnsafeBufferPointer<UInt8>) -> JSONKeep {
        switch self {
        case .whole: return .whole
        case .nothing: return .nothing
        case .members(let members): return members.first { $0.key.elementsEqual(key) }?.keep ?? .nothing
        }
    }
}

/// The cursor `JSONValue.parse` reads with.
private struct JSONReader {
    let bytes: UnsafeBufferPointer<UInt8>
    var position = 0

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    private var current: UInt8? { position < bytes.count ? bytes[position] : nil }

    mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { position += 1 }
    }

    private mutating func consume(_ byte: UInt8) -> Bool {
        guard current == byte else { return false }
        position += 1
        return true
    }

    /// The value here; a value not kept (`JSONKeep.nothing`) is checked and read as `.null`.
    mutating func value(depth: Int, keep: JSONKeep) -> JSONValue? {
        guard depth < JSONValue.maxDepth, let byte = current else { return nil }
        let build = if case .nothing = keep { false } else { true }
        switch byte {
        case UInt8(ascii: "{"): return object(depth: depth, keep: keep)
        case UInt8(ascii: "["): return array(depth: depth, keep: build ? .whole : .nothing)
        case UInt8(ascii: "\""):
            guard let text = string() else { return nil }
            return build ? Self.text(text).map(JSONValue.string) : Self.isUTF8(text) ? .null : nil
        case UInt8(ascii: "t"): return literal("true", .bool(true))
        case UInt8(ascii: "f"): return literal("false", .bool(false))
        case UInt8(ascii: "n"): return literal("null", .null)
        default: return number(build: build)
        }
    }

    private mutating func object(depth: Int, keep: JSONKeep) -> JSONValue? {
        position += 1
        var members: [(key: String, value: JSONValue)] = []
        skipWhitespace()
        if consume(UInt8(ascii: "}")) { return .object(members) }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\""), let key = string(), Self.isUTF8(key) else { return nil }
            let memberKeep = key.withUnsafeBufferPointer { keep.member($0) }
            skipWhitespace()
            guard consume(UInt8(ascii: ":")) else { return nil }
            skipWhitespace()
            guard let value = value(depth: depth + 1, keep: memberKeep) else { return nil }
            switch memberKeep {
            case .nothing: break
            default: members.append((key.withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self) }, value))
            }
            skipWhitespace()
            if consume(UInt8(ascii: "}")) { return .object(members) }
            guard consume(UInt8(ascii: ",")) else { return nil }
        }
    }

    private mutating func array(depth: Int, keep: JSONKeep) -> JSONValue? {
        position += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if consume(UInt8(ascii: "]")) { return .array(elements) }
        while true {
            skipWhitespace()
            guard let element = value(depth: depth + 1, keep: keep) else { return nil }
            if case .whole = keep { elements.append(element) }
            skipWhitespace()
            if consume(UInt8(ascii: "]")) { return .array(elements) }
            guard consume(UInt8(ascii: ",")) else { return nil }
        }
    }

    private mutating func literal(_ word: StaticString, _ value: JSONValue) -> JSONValue? {
        let count = word.utf8CodeUnitCount
        guard bytes.count - position >= count,
              UnsafeBufferPointer(start: word.utf8Start, count: count).elementsEqual(bytes[position..<(position + count)]) else { return nil }
        position += count
        return value
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`; its text only when `build`.
    private mutating func number(build: Bool) -> JSONValue? {
        let start = position
        _ = consume(UInt8(ascii: "-"))
        guard let first = current, isDigit(first) else { return nil }
        position += 1
        if first != UInt8(ascii: "0") { skipDigits() }
        if consume(UInt8(ascii: ".")) {
            guard let byte = current, isDigit(byte) else { return nil }
            skipDigits()
        }
        if consume(UInt8(ascii: "e")) || consume(UInt8(ascii: "E")) {
            if !consume(UInt8(ascii: "+")) { _ = consume(UInt8(ascii: "-")) }
            guard let byte = current, isDigit(byte) else { return nil }
            skipDigits()
        }
        guard build else { return .null }
        return .number(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self))
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    private mutating func skipDigits() {
        while let byte = current, isDigit(byte) { position += 1 }
    }

    /// A string's bytes with its escapes undone: a run of the document when it has none, so
    /// a string that is not kept allocates nothing.
    private enum StringBytes {
        /// `ascii`: every byte is below 0x80, so the run is UTF-8 without a further look.
        case run(UnsafeBufferPointer<UInt8>, ascii: Bool)
        case unescaped([UInt8])

        func withUnsafeBufferPointer<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
            switch self {
            case .run(let bytes, _): body(bytes)
            case .unescaped(let bytes): bytes.withUnsafeBufferPointer(body)
            }
        }

        var isASCII: Bool {
            switch self {
            case .run(_, let ascii): ascii
            case .unescaped(let bytes): bytes.allSatisfy { $0 < 0x80 }
            }
        }
    }

    /// A string from its opening quote; nil for a control character, a bad escape or a lone
    /// surrogate. Whether it is UTF-8 is for `isUTF8` or `text` to say.
    private mutating func string() -> StringBytes? {
        position += 1
        let start = position
        // Most strings have no escape: their bytes are the string.
        var high: UInt8 = 0
        while let byte = current, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\"), byte >= 0x20 {
            high |= byte
            position += 1
        }
        if current == UInt8(ascii: "\"") {
            defer { position += 1 }
            return .run(UnsafeBufferPointer(rebasing: bytes[start..<position]), ascii: high < 0x80)
        }
        var text = Array(bytes[start..<position])
        while let byte = current {
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                return .unescaped(text)
            case UInt8(ascii: "\\"):
                guard let escaped = escape() else { return nil }
                text += escaped
            case ..<0x20:
                return nil
            default:
                text.append(byte)
            }
        }
        return nil
    }

    /// The string of these bytes when they are UTF-8 (ASCII, the usual case, checked first:
    /// validating a few ASCII bytes costs more than reading them).
    private static func text(_ string: StringBytes) -> String? {
        let ascii = string.isASCII
        return string.withUnsafeBufferPointer { bytes in
            ascii ? String(decoding: bytes, as: UTF8.self) : String(validating: bytes, as: UTF8.self)
        }
    }

    /// Whether the bytes are UTF-8, checked without making a String.
    private static func isUTF8(_ string: StringBytes) -> Bool {
        string.isASCII || string.withUnsafeBufferPointer { bytes in
            !transcode(bytes.makeIterator(), from: UTF8.self, to: UTF32.self, stoppingOnError: true) { _ in }
        }
    }

    /// The UTF-8 of the escape after a backslash.
    private mutating func escape() -> [UInt8]? {
        guard let byte = current else { return nil }
        position += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): return [byte]
        case UInt8(ascii: "b"): return [0x08]
        case UInt8(ascii: "f"): return [0x0C]
        case UInt8(ascii: "n"): return [0x0A]
        case UInt8(ascii: "r"): return [0x0D]
        case UInt8(ascii: "t"): return [0x09]
        case UInt8(ascii: "u"):
            guard let unit = hex4() else { return nil }
            var scalar = UInt32(unit)
            if (0xD800...0xDBFF).contains(unit) {
                guard consume(UInt8(ascii: "\\")), consume(UInt8(ascii: "u")), let low = hex4(), (0xDC00...0xDFFF).contains(low) else { return nil }
                scalar = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
            }
            guard let character = Unicode.Scalar(scalar) else { return nil }
            return Array(String(Character(character)).utf8)
        default:
            return nil
        }
    }

    private mutating func hex4() -> UInt16? {
        guard bytes.count - position >= 4 else { return nil }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt8
            switch byte {
            case 0x30...0x39: digit = byte - 0x30
            case 0x41...0x46: digit = byte - 0x41 + 10
            case 0x61...0x66: digit = byte - 0x61 + 10
            default: return nil
            }
            value = value << 4 | UInt16(digit)
            position += 1
        }
        return value
    }
}
