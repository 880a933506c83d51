/// A `Decodable` with every kind of JSON container and value (objects, arrays, optionals,
/// integers of several widths, floating point, strings, booleans, a dictionary): what the
/// upstream decoder's tests and its fuzz target decode, beside Foundation's `JSONDecoder`.
public struct JSONSample: Decodable, Equatable, Sendable {
    public struct Inner: Decodable, Equatable, Sendable {
        public let i8: Int8?
        public let u16: UInt16?
        public let f: Float?
        public let s: String?
    }
    public let int: Int?
    public let double: Double?
    public let string: String?
    public let list: [Inner?]?
    public let flag: Bool?
    public let map: [String: Int]?
    public let u: UInt?
    public let i64: Int64?
}
