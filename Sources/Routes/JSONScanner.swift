import HTTPCore

/// RFC 8259's grammar over a body's bytes, for `UpstreamJSONDecoder`: where each value ends,
/// checked on the way, and what a string holds. Strict wherever it reads, ignored members too:
/// a trailing comma, a number such as `01`, `1.` or `-`, an unknown escape or a raw control
/// character in a string makes the whole body malformed.
struct JSONScanner {
    let bytes: [UInt8]

    /// Nesting deeper than this is refused rather than recursed into, so no body can exhaust
    /// the stack (Foundation's `JSONDecoder` stops at the same depth).
    static let maximumDepth = 512

    /// The body is not JSON: the offset of the first byte that cannot be read.
    struct Malformed: Error {
        let offset: Int
    }

    func skippingWhitespace(from start: Int) -> Int {
        var index = start
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
            index += 1
        }
        return index
    }

    /// Where the value starting at `start` ends (the offset just past it).
    func end(ofValueAt start: Int, depth: Int = 0) throws(Malformed) -> Int {
        guard start < bytes.count else { throw Malformed(offset: start) }
        switch bytes[start] {
        case UInt8(ascii: "\""): return try end(ofStringAt: start)
        case UInt8(ascii: "{"): return try forEachMember(ofObjectAt: start, depth: depth) { _, _ in }
        case UInt8(ascii: "["): return try forEachElement(ofArrayAt: start, depth: depth) { _ in }
        case UInt8(ascii: "t"): return try end(ofLiteral: "true", at: start)
        case UInt8(ascii: "f"): return try end(ofLiteral: "false", at: start)
        case UInt8(ascii: "n"): return try end(ofLiteral: "null", at: start)
        default: return try end(ofNumberAt: start)
        }
    }

    /// Calls `body` with each member's key (the bytes between its quotes) and the offset of its
    /// value, in order; returns where the object ends.
    func forEachMember(ofObjectAt start: Int, depth: Int, _ body: (Range<Int>, Int) throws(Malformed) -> Void) throws(Malformed) -> Int {
        guard depth < Self.maximumDepth else { throw Malformed(offset: start) }
        var index = skippingWhitespace(from: start + 1)
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { return index + 1 }
        while true {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw Malformed(offset: index) }
            let keyEnd = try end(ofStringAt: index)
            // Every name must read as text, as `JSONDecoder` reads every one (a lone surrogate escape does not).
            if bytes[(index + 1)..<(keyEnd - 1)].contains(UInt8(ascii: "\\")), text((index + 1)..<(keyEnd - 1)) == nil {
                throw Malformed(offset: index)
            }
            let colon = skippingWhitespace(from: keyEnd)
            guard colon < bytes.count, bytes[colon] == UInt8(ascii: ":") else { throw Malformed(offset: colon) }
            let value = skippingWhitespace(from: colon + 1)
            try body(index + 1 ..< keyEnd - 1, value)
            let separator = try separator(after: end(ofValueAt: value, depth: depth + 1), closing: UInt8(ascii: "}"))
            if separator.closes { return separator.offset + 1 }
            index = skippingWhitespace(from: separator.offset + 1)
        }
    }

    /// The members of the object at `start`, in order.
    func members(ofObjectAt start: Int) throws(Malformed) -> [JSONMember] {
        var members: [JSONMember] = []
        _ = try forEachMember(ofObjectAt: start, depth: 0) { name, value in
            members.append(JSONMember(name: name, escaped: bytes[name].contains(UInt8(ascii: "\\")), value: value))
        }
        return members
    }

    /// The offset of the value of the first of `members` named `name`.
    func value(named name: String, in members: [JSONMember]) -> Int? {
        var name = name
        return name.withUTF8 { wanted in
            members.first { member in
                if member.escaped { return text(member.name).map { $0.utf8.elementsEqual(wanted) } ?? false }
                guard member.name.count == wanted.count else { return false }
                for (offset, byte) in wanted.enumerated() where bytes[member.name.lowerBound + offset] != byte { return false }
                return true
            }?.value
        }
    }

    /// Calls `body` with the offset of each element, in order; returns where the array ends.
    func forEachElement(ofArrayAt start: Int, depth: Int, _ body: (Int) throws(Malformed) -> Void) throws(Malformed) -> Int {
        guard depth < Self.maximumDepth else { throw Malformed(offset: start) }
        var index = skippingWhitespace(from: start + 1)
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") { return index + 1 }
        while true {
            try body(index)
            let separator = try separator(after: end(ofValueAt: index, depth: depth + 1), closing: UInt8(ascii: "]"))
            if separator.closes { return separator.offset + 1 }
            index = skippingWhitespace(from: separator.offset + 1)
        }
    }

    /// What follows a member or an element that ends at `end`: a comma, or `closing`.
    private func separator(after end: Int, closing: UInt8) throws(Malformed) -> (offset: Int, closes: Bool) {
        let index = skippingWhitespace(from: end)
        guard index < bytes.count, bytes[index] == closing || bytes[index] == UInt8(ascii: ",") else { throw Malformed(offset: index) }
        return (index, bytes[index] == closing)
    }

    /// Where the string whose opening quote is at `start` ends (just past its closing quote).
    func end(ofStringAt start: Int) throws(Malformed) -> Int {
        var index = start + 1
        while true {
            while index < bytes.count, bytes[index] >= 0x20, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\") {
                index += 1
            }
            guard index < bytes.count, bytes[index] >= 0x20 else { throw Malformed(offset: index) }
            if bytes[index] == UInt8(ascii: "\"") { return index + 1 }
            guard index + 1 < bytes.count else { throw Malformed(offset: index) }
            switch bytes[index + 1] {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"),
                 UInt8(ascii: "r"), UInt8(ascii: "t"):
                index += 2
            case UInt8(ascii: "u") where hexQuad(at: index + 2) != nil:
                index += 6
            default:
                throw Malformed(offset: index)
            }
        }
    }

    /// The text of a string's contents (the bytes between its quotes, as `forEachMember` gives a
    /// key), escapes resolved; nil unless it is UTF-8 and every surrogate escape is paired.
    func text(_ contents: Range<Int>) -> String? {
        guard bytes[contents].contains(UInt8(ascii: "\\")) else { return String(validating: bytes[contents], as: UTF8.self) }
        var resolved: [UInt8] = []
        resolved.reserveCapacity(contents.count)
        var index = contents.lowerBound
        while index < contents.upperBound {
            guard bytes[index] == UInt8(ascii: "\\"), index + 1 < contents.upperBound else {
                resolved.append(bytes[index])
                index += 1
                continue
            }
            let escaped = bytes[index + 1]
            index += 2
            switch escaped {
            case UInt8(ascii: "b"): resolved.append(0x08)
            case UInt8(ascii: "f"): resolved.append(0x0C)
            case UInt8(ascii: "n"): resolved.append(0x0A)
            case UInt8(ascii: "r"): resolved.append(0x0D)
            case UInt8(ascii: "t"): resolved.append(0x09)
            case UInt8(ascii: "u"):
                guard var scalar = hexQuad(at: index) else { return nil }
                index += 4
                if (0xD800..<0xDC00).contains(scalar) {
                    guard index + 6 <= contents.upperBound, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u"),
                          let low = hexQuad(at: index + 2), (0xDC00..<0xE000).contains(low) else { return nil }
                    scalar = 0x10000 + (scalar - 0xD800) << 10 + (low - 0xDC00)
                    index += 6
                }
                guard let character = Unicode.Scalar(scalar) else { return nil }  // a lone low surrogate
                UTF8.encode(character) { resolved.append($0) }
            default:
                resolved.append(escaped)
            }
        }
        return String(validating: resolved, as: UTF8.self)
    }

    /// Where the number at `start` ends: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    func end(ofNumberAt start: Int) throws(Malformed) -> Int {
        var index = start
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, FieldSyntax.isDigit(bytes[index]) else { throw Malformed(offset: index) }
        index = bytes[index] == UInt8(ascii: "0") ? index + 1 : digitsEnd(from: index)
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            let fraction = digitsEnd(from: index + 1)
            guard fraction > index + 1 else { throw Malformed(offset: fraction) }
            index = fraction
        }
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            var exponent = index + 1
            if exponent < bytes.count, bytes[exponent] == UInt8(ascii: "+") || bytes[exponent] == UInt8(ascii: "-") { exponent += 1 }
            index = digitsEnd(from: exponent)
            guard index > exponent else { throw Malformed(offset: index) }
        }
        return index
    }

    private func end(ofLiteral literal: StaticString, at start: Int) throws(Malformed) -> Int {
        let end = start + literal.utf8CodeUnitCount
        guard end <= bytes.count, bytes[start..<end].elementsEqual(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)) else {
            throw Malformed(offset: start)
        }
        return end
    }

    private func digitsEnd(from start: Int) -> Int {
        var index = start
        while index < bytes.count, FieldSyntax.isDigit(bytes[index]) { index += 1 }
        return index
    }

    /// The four hex digits at `start` as a number, nil unless there are four.
    private func hexQuad(at start: Int) -> UInt32? {
        guard start + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for byte in bytes[start..<(start + 4)] {
            guard let digit = FieldSyntax.hexValue(byte) else { return nil }
            value = value << 4 | UInt32(digit)
        }
        return value
    }
}

/// A member of an object: its name's bytes (between the quotes), whether the name holds an
/// escape (and must be resolved to be compared), and the offset of its value.
struct JSONMember {
    let name: Range<Int>
    let escaped: Bool
    let value: Int
}
