import Caching
import Redis
import RequestTracing
import Tracing

/// The shared tier's store on Redis: each operation is one pipeline on the client's
/// connection (so a write and the message after it arrive in order), and anything but the
/// expected reply is an error, which the tier treats as "Redis could not be asked".
struct RedisStore: SharedStore {
    let client: RedisClient

    struct UnexpectedReply: Error, CustomStringConvertible {
        let reply: RedisReply
        var description: String { "unexpected Redis reply: \(reply)" }
    }

    private static func word(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// Each call of a traced request is a client span, named by its first command.
    private func run(_ commands: [[[UInt8]]]) async throws -> [RedisReply] {
        guard let trace = Trace.current else { return try await send(commands) }
        let operation = String(decoding: commands.first?.first ?? [], as: UTF8.self)
        return try await trace.span(operation, kind: .client) { span in
            var attributes = span.attributes
            attributes["db.system.name"] = "redis"
            attributes["db.operation.name"] = SpanAttribute.string(operation)
            if commands.count > 1 { attributes["db.operation.batch.size"] = SpanAttribute.int64(Int64(commands.count)) }
            span.attributes = attributes
            return try await send(commands)
        }
    }

    private func send(_ commands: [[[UInt8]]]) async throws -> [RedisReply] {
        let replies = try await client.pipeline(commands).get()
        for reply in replies { if case .error(let message) = reply { throw SharedStoreRefusal(message) } }
        return replies
    }

    /// `GETRANGE 0 limit`, not `GET`: a value planted far larger than any entry costs at most
    /// `limit` + 1 bytes to read. A missing key reads as empty, which is no entry either.
    private static func read(_ key: String, limit: Int) -> [[UInt8]] {
        [word("GETRANGE"), word(key), word("0"), word(String(limit))]
    }

    private static func value(_ reply: RedisReply) throws -> [UInt8]? {
        switch reply {
        case .bytes(let bytes): return bytes.isEmpty ? nil : bytes
        case .null: return nil
        case let other: throw UnexpectedReply(reply: other)
        }
    }

    func value(at key: String, limit: Int) async throws -> [UInt8]? {
        try Self.value(try await run([Self.read(key, limit: limit)])[0])
    }

    func store(_ value: [UInt8], at key: String, expiry: Duration, member: String, sets: [String]) async throws {
        let milliseconds = Self.word(String(expiry.wholeMilliseconds))
        var commands = [[Self.word("SET"), Self.word(key), value, Self.word("PX"), milliseconds]]
        for set in sets {
            // A set lives as long as its longest-lived member: NX sets a first expiry, GT only ever extends it.
            commands.append([Self.word("SADD"), Self.word(set), Self.word(member)])
            commands.append([Self.word("PEXPIRE"), Self.word(set), milliseconds, Self.word("NX")])
            commands.append([Self.word("PEXPIRE"), Self.word(set), milliseconds, Self.word("GT")])
        }
        _ = try await run(commands)
    }

    func lock(_ key: String, token: String, expiry: Duration, reading: String, limit: Int) async throws -> (taken: Bool, value: [UInt8]?) {
        let replies = try await run([[Self.word("SET"), Self.word(key), Self.word(token), Self.word("NX"), Self.word("PX"),
                                      Self.word(String(expiry.wholeMilliseconds))],
                                     Self.read(reading, limit: limit)])
        let taken: Bool
        switch replies[0] {
        case .status("OK"): taken = true
        case .null: taken = false
        default: throw UnexpectedReply(reply: replies[0])
        }
        return (taken, try Self.value(replies[1]))
    }

    /// Compare and delete in one step, so a lock that expired and was taken by another replica is left alone.
    private static let unlockScript = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"

    func unlock(_ key: String, token: String, publishing message: [UInt8]) async throws {
        _ = try await run([[Self.word("EVAL"), Self.word(Self.unlockScript), Self.word("1"), Self.word(key), Self.word(token)],
                           [Self.word("PUBLISH"), Self.word(channel), message]])
    }

    func members(of sets: [String]) async throws -> [String] {
        guard !sets.isEmpty else { return [] }
        guard case .array(let members) = try await run([[Self.word("SUNION")] + sets.map(Self.word)])[0] else { return [] }
        return members.compactMap { $0.bytesValue.map { String(decoding: $0, as: UTF8.self) } }
    }

    func keys(withPrefix prefix: String) async throws -> [String] {
        var cursor = "0"
        var keys: [String] = []
        let pattern = Self.word(Self.globEscaped(prefix) + "*")
        repeat {
            let reply = try await run([[Self.word("SCAN"), Self.word(cursor), Self.word("MATCH"), pattern, Self.word("COUNT"), Self.word("1000")]])[0]
            guard case .array(let parts) = reply, parts.count == 2, let next = parts[0].bytesValue, case .array(let found) = parts[1] else {
                throw UnexpectedReply(reply: reply)
            }
            cursor = String(decoding: next, as: UTF8.self)
            keys += found.compactMap { $0.bytesValue.map { String(decoding: $0, as: UTF8.self) } }
        } while cursor != "0"
        return keys
    }

    func remove(_ keys: [String]) async throws -> [Bool] {
        guard !keys.isEmpty else { return [] }
        return try await run(keys.map { [Self.word("DEL"), Self.word($0)] }).map { $0 == .integer(1) }
    }

    func publish(_ message: [UInt8]) async throws {
        _ = try await run([[Self.word("PUBLISH"), Self.word(channel), message]])
    }

    /// The channel every replica listens on; set by the tier's prefix.
    let channel: String

    /// A prefix as a SCAN pattern matches it literally.
    static func globEscaped(_ text: String) -> String {
        var escaped = ""
        for character in text {
            if "*?[]\\".contains(character) { escaped.append("\\") }
            escaped.append(character)
        }
        return escaped
    }
}

extension Duration {
    /// Whole milliseconds, at least one (Redis refuses an expiry of zero).
    var wholeMilliseconds: Int64 { max(1, components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000) }
}
