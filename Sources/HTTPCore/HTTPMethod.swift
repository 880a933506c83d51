/// A request method (RFC 9110 §9). Known methods are cases so routing compares integers;
/// any other token is kept as written, because a gateway forwards methods it does not know.
public enum HTTPMethod: Hashable, Sendable, CustomStringConvertible {
    case get, head, post, put, delete, options, patch, trace, connect
    case other(String)

    /// From the request line's bytes: known methods without making a String. Inlinable, so
    /// the parser's raw buffer is read directly rather than through a generic collection.
    @inlinable
    public init<Bytes: RandomAccessCollection<UInt8>>(bytes: Bytes) where Bytes.Index == Int {
        let s = bytes.startIndex
        switch bytes.count {
        case 3 where bytes[s] == 0x47 && bytes[s + 1] == 0x45 && bytes[s + 2] == 0x54: self = .get
        case 4 where bytes[s] == 0x48 && bytes[s + 1] == 0x45 && bytes[s + 2] == 0x41 && bytes[s + 3] == 0x44: self = .head
        case 4 where bytes[s] == 0x50 && bytes[s + 1] == 0x4F && bytes[s + 2] == 0x53 && bytes[s + 3] == 0x54: self = .post
        default: self.init(token: String(decoding: bytes, as: UTF8.self))
        }
    }

    public init(token: String) {
        switch token {
        case "GET": self = .get
        case "HEAD": self = .head
        case "POST": self = .post
        case "PUT": self = .put
        case "DELETE": self = .delete
        case "OPTIONS": self = .options
        case "PATCH": self = .patch
        case "TRACE": self = .trace
        case "CONNECT": self = .connect
        default: self = .other(token)
        }
    }

    public var description: String {
        switch self {
        case .get: "GET"
        case .head: "HEAD"
        case .post: "POST"
        case .put: "PUT"
        case .delete: "DELETE"
        case .options: "OPTIONS"
        case .patch: "PATCH"
        case .trace: "TRACE"
        case .connect: "CONNECT"
        case .other(let token): token
        }
    }
}
