import Foundation
import HTTPCore
import Locking
import Synchronization

/// Any JSON value, for the JSON Larder reads without a type of its own: an aggregate part's
/// answer (its pointer and fields) and an admin request's body. It is read by Foundation's
/// `JSONDecoder`, as the upstream formats' Codable types are, so Larder reads all JSON one
/// way: RFC 8259's grammar as `JSONDecoder` takes it, nesting to 512 levels, and the first
/// of two members with one name.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// A whole number an `Int` holds, written `3`, `3.0` or `3e0` (`JSONDecoder` reads each
    /// as an integer), or whole once read as a `Double`.
    case integer(Int)
    /// Any other number; finite, since `JSONDecoder` refuses one beyond a `Double`.
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// `bytes` as one JSON value; throws `DecodingError` when they are not one.
    public init(reading bytes: [UInt8]) throws {
        self = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    }

    /// `bytes` as one JSON value, and the names of its members (when it is an object) in
    /// order, a repeated name as often as it is written, which `.object` cannot show: an
    /// admin body that says one thing twice is refused. `JSONDecoder` hands each name of an
    /// object to a custom key strategy as it reads the object, repeats included; the
    /// strategy keeps the top level's and changes none.
    public static func readingNames(_ bytes: [UInt8]) throws -> (value: JSONValue, names: [String]) {
        let names = Locked<[String]>([])
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .custom { path in
            if path.count == 1 { names.withLock { $0.append(path[0].stringValue) } }
            return path[path.count - 1]
        }
        let value = try decoder.decode(JSONValue.self, from: Data(bytes))
        return (value, names.withLock { $0 })
    }
}

extension JSONValue: Decodable {
    public init(from decoder: any Decoder) throws {
        // An object's keyed container is asked for once, so a key strategy sees each name once.
        if let object = try? decoder.container(keyedBy: Name.self) {
            var members: [String: JSONValue] = [:]
            members.reserveCapacity(object.allKeys.count)
            for name in object.allKeys { members[name.stringValue] = try object.decode(JSONValue.self, forKey: name) }
            self = .object(members)
        } else if var array = try? decoder.unkeyedContainer() {
            var elements: [JSONValue] = []
            elements.reserveCapacity(array.count ?? 0)
            while !array.isAtEnd { elements.append(try array.decode(JSONValue.self)) }
            self = .array(elements)
        } else {
            let single = try decoder.singleValueContainer()
            if single.decodeNil() {
                self = .null
            } else if let bool = try? single.decode(Bool.self) {
                self = .bool(bool)
            } else if let integer = try? single.decode(Int.self) {
                self = .integer(integer)
            } else if let double = try? single.decode(Double.self) {
                // Whole once it is a Double (`8.8888888888888884011e16`): an integer, as its
                // text reads back, so a value reads back from its own text as itself.
                self = Int(exactly: double).map(JSONValue.integer) ?? .double(double)
            } else {
                self = .string(try single.decode(String.self))
            }
        }
    }

    /// Any member name.
    struct Name: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}

extension JSONValue {
    /// The value as JSON text, members in `localizedStandardCompare` order (`9` before `10`,
    /// `a` before `B`), the order of `JSONSerialization`'s `.sortedKeys`: the same value always
    /// gives the same bytes, and so an aggregate the same ETag. Strings escaped by `JSONString`.
    public var json: [UInt8] {
        var out: [UInt8] = []
        write(to: &out)
        return out
    }

    private func write(to out: inout [UInt8]) {
        switch self {
        case .null: out += "null".utf8
        case .bool(let value): out += (value ? "true" : "false").utf8
        case .integer(let value): out += value.description.utf8
        case .double(let value):
            // Finite, and never whole within an `Int` (that is `.integer`): `1e-07`, `1.5e+300`.
            let text = value.description
            out += (text.hasSuffix(".0") ? String(text.dropLast(2)) : text).utf8
        case .string(let value): JSONString.append(value, to: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                element.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, name) in members.keys.sorted(by: { $0.localizedStandardCompare($1) == .orderedAscending }).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONString.append(name, to: &out)
                out.append(UInt8(ascii: ":"))
                members[name]!.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }
}
