import CHiredis
import RedisVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// One blocking hiredis connection, used from one thread at a time: connect (with the
/// timeout), log in, choose the database, then pipelines of commands. Any error leaves the
/// connection unusable (hiredis's rule); its owner closes it and connects again later.
final class RedisConnection {
    private var context: UnsafeMutablePointer<redisContext>
    let timeoutMilliseconds: Int

    /// Connects within `timeoutMilliseconds` and sends AUTH and SELECT when the URL asks.
    init(_ url: RedisURL, timeoutMilliseconds: Int) throws(RedisFailure) {
        guard let context = redisConnectWithTimeout(url.host, Int32(url.port), larder_redis_timeval(timeoutMilliseconds)) else {
            throw .unavailable("cannot allocate a Redis connection")
        }
        guard larder_redis_error(context) == 0 else {
            let reason = String(cString: larder_redis_error_text(context))
            redisFree(context)
            throw .unavailable("cannot connect to \(url): \(reason)")
        }
        // From here on a throw runs deinit, which frees the context: no redisFree of our own.
        self.context = context
        self.timeoutMilliseconds = timeoutMilliseconds
        redisSetTimeout(context, larder_redis_timeval(timeoutMilliseconds))
        redisEnableKeepAlive(context)
        var commands: [[[UInt8]]] = []
        if let password = url.password {
            commands.append([Array("AUTH".utf8)] + (url.username.map { [Array($0.utf8)] } ?? []) + [Array(password.utf8)])
        }
        if url.database != 0 { commands.append([Array("SELECT".utf8), Array(String(url.database).utf8)]) }
        if commands.isEmpty { return }
        for reply in try pipeline(commands) {
            if case .error(let refusal) = reply { throw .unavailable("Redis refused the login or database: \(refusal)") }
        }
    }

    deinit { redisFree(context) }

    var fileDescriptor: Int32 { context.pointee.fd }

    /// Sends every command, then reads one reply per command, in order.
    func pipeline(_ commands: [[[UInt8]]]) throws(RedisFailure) -> [RedisReply] {
        for command in commands { try append(command) }
        var replies: [RedisReply] = []
        replies.reserveCapacity(commands.count)
        for _ in commands {
            var raw: UnsafeMutableRawPointer?
            guard redisGetReply(context, &raw) == REDIS_OK, let raw else { throw failure() }
            replies.append(try Self.copy(raw))
        }
        return replies
    }

    /// A reply already read into hiredis's buffer, without waiting; nil when none is whole yet.
    func bufferedReply() throws(RedisFailure) -> RedisReply? {
        var raw: UnsafeMutableRawPointer?
        guard redisGetReplyFromReader(context, &raw) == REDIS_OK else { throw failure() }
        guard let raw else { return nil }
        return try Self.copy(raw)
    }

    /// Reads what the socket holds into hiredis's buffer (after `poll` said it is readable).
    func readSocket() throws(RedisFailure) {
        guard redisBufferRead(context) == REDIS_OK else { throw failure() }
    }

    private func append(_ command: [[UInt8]]) throws(RedisFailure) {
        let status: Int32 = command.withPointers { argv, lengths in
            redisAppendCommandArgv(context, Int32(command.count), argv, lengths)
        }
        guard status == REDIS_OK else { throw failure() }
    }

    private func failure() -> RedisFailure {
        let code = larder_redis_error(context)
        let text = String(cString: larder_redis_error_text(context))
        if code == REDIS_ERR_IO, errno == EAGAIN || errno == EWOULDBLOCK || text.contains("temporarily unavailable") { return .timeout }
        if code == REDIS_ERR_EOF { return .unavailable("Redis closed the connection") }
        if code == REDIS_ERR_PROTOCOL { return .unavailable("Redis answered something that is not its protocol: \(text)") }
        return .unavailable(text.isEmpty ? "Redis connection error \(code)" : text)
    }

    private static func copy(_ raw: UnsafeMutableRawPointer) throws(RedisFailure) -> RedisReply {
        defer { freeReplyObject(raw) }
        guard let reply = RedisReply(raw.assumingMemoryBound(to: redisReply.self)) else {
            throw .unavailable("Redis answered a reply larger or deeper than any Larder stores")
        }
        return reply
    }
}

extension Array where Element == [UInt8] {
    /// C's argv and argvlen for these arguments, valid inside `body`.
    func withPointers<R>(_ body: (UnsafeMutablePointer<UnsafePointer<CChar>?>, UnsafePointer<Int>) -> R) -> R {
        var lengths = map(\.count)
        let storage = UnsafeMutablePointer<UnsafePointer<CChar>?>.allocate(capacity: Swift.max(count, 1))
        defer { storage.deallocate() }
        var copies: [UnsafeMutablePointer<CChar>] = []
        defer { copies.forEach { $0.deallocate() } }
        for (i, argument) in enumerated() {
            let copy = UnsafeMutablePointer<CChar>.allocate(capacity: Swift.max(argument.count, 1))
            argument.withUnsafeBufferPointer { bytes in
                if let base = bytes.baseAddress { UnsafeMutableRawPointer(copy).copyMemory(from: base, byteCount: bytes.count) }
            }
            copies.append(copy)
            storage[i] = UnsafePointer(copy)
        }
        return lengths.withUnsafeMutableBufferPointer { body(storage, UnsafePointer($0.baseAddress!)) }
    }
}
