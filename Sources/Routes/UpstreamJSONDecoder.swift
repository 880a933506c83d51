import HTTPCore

/// A Codable decoder straight over an upstream body's bytes, for the formats a miss decodes:
/// it runs 25,000 instructions a miss where Foundation's `JSONDecoder` ran 74,000 (gate path
/// built-in-miss).
///
/// It reads what `JSONDecoder` reads, keeping the first of two members with one name and taking
/// a whole number written `3.0` or `1e2` for an integer (and a zero written `0e3`, which
/// `JSONDecoder` on Linux refuses as a Double), and refuses more: a body that is not
/// UTF-8 anywhere (RFC 8259 §8.1; a byte-order mark is skipped), and any break of JSON's
/// grammar, in members it ignores too (`JSONScanner`).
struct UpstreamJSONDecoder {
    func decode<Value: Decodable>(_ type: Value.Type, from bytes: [UInt8]) throws -> Value {
        guard (try? UTF8Span(validating: bytes.span)) != nil else { throw JSONScanner.Malformed(offset: 0) }
        let scanner = JSONScanner(bytes: bytes)
        let start = scanner.skippingWhitespace(from: bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0)
        let end = try scanner.end(ofValueAt: start)
        guard scanner.skippingWhitespace(from: end) == bytes.count else { throw JSONScanner.Malformed(offset: end) }
        return try Value(from: JSONValueDecoder(scanner: scanner, start: start, codingPath: []))
    }
}

/// One value of the body, already checked by the scanner: the decoder a `Decodable` reads it
/// through, and its single-value container.
private struct JSONValueDecoder: Decoder, SingleValueDecodingContainer {
    let scanner: JSONScanner
    let start: Int
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    private var first: UInt8 { scanner.bytes[start] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard first == UInt8(ascii: "{") else { throw mismatch([String: Any].self) }
        return KeyedDecodingContainer(JSONObjectContainer<Key>(object: self, members: try scanner.members(ofObjectAt: start)))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard first == UInt8(ascii: "[") else { throw mismatch([Any].self) }
        var elements: [Int] = []
        _ = try scanner.forEachElement(ofArrayAt: start, depth: 0) { elements.append($0) }
        return JSONArrayContainer(array: self, elements: elements)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    /// The value of a member or element at `offset`, one step down the coding path.
    func child(at offset: Int, key: any CodingKey) -> JSONValueDecoder {
        JSONValueDecoder(scanner: scanner, start: offset, codingPath: codingPath + [key])
    }

    func mismatch(_ type: Any.Type) -> DecodingError {
        let context = DecodingError.Context(codingPath: codingPath, debugDescription: "Expected \(type), found another JSON value")
        return first == UInt8(ascii: "n") ? .valueNotFound(type, context) : .typeMismatch(type, context)
    }

    func decodeNil() -> Bool { first == UInt8(ascii: "n") }

    func decode(_ type: Bool.Type) throws -> Bool {
        guard first == UInt8(ascii: "t") || first == UInt8(ascii: "f") else { throw mismatch(type) }
        return first == UInt8(ascii: "t")
    }

    func decode(_ type: String.Type) throws -> String {
        guard first == UInt8(ascii: "\"") else { throw mismatch(type) }
        guard let text = try scanner.text(start + 1 ..< scanner.end(ofStringAt: start) - 1) else {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "A string that is not UTF-8"))
        }
        return text
    }

    /// The `Double` and `Float` requirements: the most specific of the generic `decode`s meets each.
    func decode<Value: BinaryFloatingPoint & LosslessStringConvertible & Decodable>(_ type: Value.Type) throws -> Value {
        try floatingPoint()
    }

    /// The ten fixed-width integer requirements, met the same way.
    func decode<Integer: FixedWidthInteger & Decodable>(_ type: Integer.Type) throws -> Integer { try integer() }

    /// Any other type reads itself from this value; the standard types' `init(from:)` come
    /// back to the requirements above.
    func decode<Value: Decodable>(_ type: Value.Type) throws -> Value { try Value(from: self) }

    /// The nearest value of the type, read on the text (a `Float` is not rounded twice through a
    /// `Double`): refused beyond the type's range, and when so small it would read as zero
    /// (`1e-400`), as `JSONDecoder` refuses both.
    private func floatingPoint<Value: BinaryFloatingPoint & LosslessStringConvertible>() throws -> Value {
        let text = try number(Value.self)
        guard let value = Value(text), value.isFinite else { throw unrepresentable(Value.self) }
        let significand = text.utf8.prefix { $0 | 0x20 != UInt8(ascii: "e") }
        guard value != 0 || !significand.contains(where: { $0 >= UInt8(ascii: "1") && $0 <= UInt8(ascii: "9") }) else {
            throw unrepresentable(Value.self)
        }
        return value
    }

    /// A whole number that fits: written plainly, or with a fraction or an exponent whose value
    /// is whole (`3.0`, `1e2`), read exactly on its digits, as `JSONDecoder` reads it.
    private func integer<Integer: FixedWidthInteger>() throws -> Integer {
        let text = try number(Integer.self)
        guard let value = Integer(text, radix: 10) ?? Self.whole(Array(text.utf8), as: Integer.self) else {
            throw unrepresentable(Integer.self)
        }
        return value
    }

    /// A number with a fraction or an exponent as a whole `Integer`: its digits shifted by the
    /// exponent, the digits shifted out all zeros; nil unless it is whole and fits. The
    /// magnitude must fit before the sign is applied, as in `JSONDecoder`.
    static func whole<Integer: FixedWidthInteger>(_ number: [UInt8], as type: Integer.Type) -> Integer? {
        let negative = number.first == UInt8(ascii: "-")
        let exponentStart = number.firstIndex { $0 | 0x20 == UInt8(ascii: "e") } ?? number.endIndex
        let mantissa = number[(negative ? 1 : 0)..<exponentStart]
        let fractionDigits = mantissa.firstIndex(of: UInt8(ascii: ".")).map { mantissa.endIndex - $0 - 1 } ?? 0
        var digits = Array(mantissa.filter { $0 != UInt8(ascii: ".") }.drop { $0 == UInt8(ascii: "0") })
        guard !digits.isEmpty else { return 0 }
        let exponentText = exponentStart == number.endIndex ? "0" : String(decoding: number[(exponentStart + 1)...], as: UTF8.self)
        // Past ±100,000 a number with a digit other than zero is beyond any integer or not
        // whole; bounding it first keeps the arithmetic below from overflowing.
        guard let exponent = Int(exponentText), (-100_000...100_000).contains(exponent) else { return nil }
        let shift = exponent - fractionDigits
        if shift < 0 {
            guard -shift < digits.count, digits.suffix(-shift).allSatisfy({ $0 == UInt8(ascii: "0") }) else { return nil }
            digits.removeLast(-shift)
        } else {
            guard digits.count + shift <= 40 else { return nil }
            digits += repeatElement(UInt8(ascii: "0"), count: shift)
        }
        guard let magnitude = Integer(String(decoding: digits, as: UTF8.self), radix: 10) else { return nil }
        guard negative else { return magnitude }
        return Integer.isSigned ? 0 - magnitude : nil
    }

    /// The text of the number here.
    private func number(_ type: Any.Type) throws -> String {
        guard first == UInt8(ascii: "-") || FieldSyntax.isDigit(first) else { throw mismatch(type) }
        return String(decoding: scanner.bytes[start..<(try scanner.end(ofNumberAt: start))], as: UTF8.self)
    }

    private func unrepresentable(_ type: Any.Type) -> DecodingError {
        .dataCorrupted(.init(codingPath: codingPath, debugDescription: "A number \(type) cannot hold"))
    }
}

/// An object's members by name, found once when the container is made; the first of two
/// members with one name is the one read.
private struct JSONObjectContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: JSONValueDecoder
    let members: [JSONMember]
    var codingPath: [any CodingKey] { object.codingPath }

    var allKeys: [Key] { members.compactMap { object.scanner.text($0.name).flatMap(Key.init(stringValue:)) } }

    func contains(_ key: Key) -> Bool { offset(of: key) != nil }

    func decodeNil(forKey key: Key) throws -> Bool { try value(key).decodeNil() }

    /// Every `decode` requirement, `Int` and `String` included, is met by this one generic: the
    /// standard types' `init(from:)` reach the value's own single-value `decode`.
    func decode<Value: Decodable>(_ type: Value.Type, forKey key: Key) throws -> Value { try value(key).decode(type) }

    func nestedContainer<Nested: CodingKey>(keyedBy type: Nested.Type, forKey key: Key) throws -> KeyedDecodingContainer<Nested> {
        try value(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try value(key).unkeyedContainer() }

    func superDecoder() throws -> any Decoder {
        guard let key = Key(stringValue: "super") else {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "No member \"super\""))
        }
        return try value(key)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder { try value(key) }

    private func offset(of key: Key) -> Int? { object.scanner.value(named: key.stringValue, in: members) }

    private func value(_ key: Key) throws -> JSONValueDecoder {
        guard let offset = offset(of: key) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "No member \"\(key.stringValue)\""))
        }
        return object.child(at: offset, key: key)
    }
}

/// An array's elements in order.
private struct JSONArrayContainer: UnkeyedDecodingContainer {
    let array: JSONValueDecoder
    let elements: [Int]
    var currentIndex = 0

    var codingPath: [any CodingKey] { array.codingPath }
    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex == elements.count }

    mutating func decodeNil() throws -> Bool {
        guard try element().decodeNil() else { return false }
        currentIndex += 1
        return true
    }

    /// Every `decode` requirement is met by this one generic, as in `JSONObjectContainer`.
    mutating func decode<Value: Decodable>(_ type: Value.Type) throws -> Value { try next { try $0.decode(type) } }

    mutating func nestedContainer<Nested: CodingKey>(keyedBy type: Nested.Type) throws -> KeyedDecodingContainer<Nested> {
        try next { try $0.container(keyedBy: type) }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next { try $0.unkeyedContainer() } }

    mutating func superDecoder() throws -> any Decoder { try next { $0 } }

    /// What `read` makes of the current element; the next one is current after.
    private mutating func next<Result>(_ read: (JSONValueDecoder) throws -> Result) throws -> Result {
        let result = try read(element())
        currentIndex += 1
        return result
    }

    private func element() throws -> JSONValueDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "No element \(currentIndex)"))
        }
        return array.child(at: elements[currentIndex], key: ElementKey(intValue: currentIndex))
    }
}

/// An element's place in a coding path.
private struct ElementKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}
