import CHiredis

/// One Redis reply, copied out of hiredis's reply object so nothing of C's outlives the call.
public enum RedisReply: Sendable, Equatable {
    case bytes([UInt8])
    case status(String)
    case integer(Int)
    case null
    case array([RedisReply])
    /// An error reply (`-ERR …`): Redis answered, but refused the command.
    case error(String)

    /// Bulk replies longer than this are refused: a value Larder stored is never this large,
    /// so a longer one comes from something that is not a Larder tier.
    public static let largestBulk = 64 << 20

    /// The reply, or nil when it breaks the limits (too long, too many elements, nested deeper than an answer of ours).
    init?(_ reply: UnsafePointer<redisReply>, depth: Int = 0) {
        let r = reply.pointee
        switch r.type {
        case REDIS_REPLY_STRING:
            guard r.len <= Self.largestBulk else { return nil }
            self = .bytes(r.len == 0 ? [] : Array(UnsafeRawBufferPointer(start: r.str, count: r.len)))
        case REDIS_REPLY_STATUS:
            self = .status(String(decoding: UnsafeRawBufferPointer(start: r.str, count: r.len), as: UTF8.self))
        case REDIS_REPLY_ERROR:
            self = .error(String(decoding: UnsafeRawBufferPointer(start: r.str, count: min(r.len, 512)), as: UTF8.self))
        case REDIS_REPLY_INTEGER:
            self = .integer(Int(r.integer))
        case REDIS_REPLY_NIL:
            self = .null
        case REDIS_REPLY_ARRAY:
            guard depth < 2, r.elements <= 1_000_000 else { return nil }
            var elements: [RedisReply] = []
            elements.reserveCapacity(r.elements)
            for i in 0..<r.elements {
                guard let element = r.element[i], let parsed = RedisReply(element, depth: depth + 1) else { return nil }
                elements.append(parsed)
            }
            self = .array(elements)
        default:
            return nil
        }
    }

    /// The bytes of a bulk reply, nil for a null one.
    public var bytesValue: [UInt8]? {
        if case .bytes(let bytes) = self { return bytes }
        return nil
    }
}
