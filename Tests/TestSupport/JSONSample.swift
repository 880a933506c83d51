/// A `Decodable` with every kind of JSON container and value (objects, arrays, optionals,
/// integers of several widths, floating point, strings, booleans, a dictionary): what the
/// typed and untyped JSON readers' tests and their fuzz target decode.
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

extension JSONSample {
    /// Whether `other` holds what this sample holds, a `Float` member within one step of
    /// this one's: the untyped reader keeps every number as a `Double` (or an `Int`), and a
    /// `Float` read from its text may round twice, once to the `Double`, once to the `Float`.
    public func agrees(with other: JSONSample) -> Bool {
        let floats = { (sample: JSONSample) in sample.list?.map { $0?.f } }
        func near(_ a: Float?, _ b: Float?) -> Bool { a == b || (a != nil && b != nil && (a!.nextUp == b! || a!.nextDown == b!)) }
        guard let mine = floats(self), let theirs = floats(other) else { return self == other }
        return mine.count == theirs.count && zip(mine, theirs).allSatisfy(near) && self.withoutFloats == other.withoutFloats
    }

    private var withoutFloats: JSONSample {
        JSONSample(int: int, double: double, string: string, list: list?.map { $0.map { Inner(i8: $0.i8, u16: $0.u16, f: nil, s: $0.s) } },
                   flag: flag, map: map, u: u, i64: i64)
    }
}
