import Dispatch
import Foundation
import Synchronization
import Locking
public import RedisVocabulary

/// Commands to one Redis server over one pipelined connection, driven by a thread of its own
/// (hiredis's blocking API): callers queue commands and await their replies; the thread sends
/// everything queued at once, then reads the replies in order.
///
/// No caller waits longer than `timeout`, whatever Redis does: each command has a deadline
/// of its own that answers `.timeout` even while the thread is still blocked. After a
/// failure the connection is dropped, and for `retryInterval` commands fail at once
/// (`.unavailable`) instead of each paying the timeout; then the next command connects again.
public final class RedisClient: Sendable {
    public let url: RedisURL
    public let timeout: Duration
    public let retryInterval: Duration

    /// A queued command (or several to send back to back) and the one place its result lands.
    private final class Pending: Sendable {
        let commands: [[[UInt8]]]
        private let continuation: Locked<CheckedContinuation<Result<[RedisReply], RedisFailure>, Never>?>

        init(_ commands: [[[UInt8]]], _ continuation: CheckedContinuation<Result<[RedisReply], RedisFailure>, Never>) {
            self.commands = commands
            self.continuation = Locked(continuation)
        }

        /// The first result wins: the reply, or the deadline. True when this one won.
        @discardableResult
        func finish(_ result: Result<[RedisReply], RedisFailure>) -> Bool {
            guard let continuation = continuation.withLock({ $0.take() }) else { return false }
            continuation.resume(returning: result)
            return true
        }

        var isFinished: Bool { continuation.withLock { $0 == nil } }
    }

    private struct State {
        var queue: [Pending] = []
        var stopped = false
        var connected = false
        /// Until when commands fail at once, after a failure.
        var retryAt = ContinuousClock.Instant.now
        var lastFailure: String?
    }

    private let state = Locked(State())
    private let wake = DispatchSemaphore(value: 0)
    private let deadlines = DispatchQueue(label: "larder.redis.deadlines")
    private let exit = ThreadExit()

    public init(url: RedisURL, timeout: Duration, retryInterval: Duration = .seconds(1)) {
        self.url = url
        self.timeout = timeout
        self.retryInterval = retryInterval
        let thread = Thread { [self] in
            run()
            exit.exited()
        }
        thread.name = "larder-redis"
        thread.start()
    }

    /// One command's reply. A Redis error reply (`-ERR`) is a reply, not a failure.
    public func command(_ arguments: [[UInt8]]) async -> Result<RedisReply, RedisFailure> {
        await pipeline([arguments]).map { $0[0] }
    }

    /// Several commands sent back to back on the one connection, replies in order (Redis
    /// runs them in that order, so a SET before a PUBLISH is visible to whoever is told).
    public func pipeline(_ commands: [[[UInt8]]]) async -> Result<[RedisReply], RedisFailure> {
        if let refusal = refusalWhileDown() { return .failure(refusal) }
        return await withCheckedContinuation { continuation in
            let pending = Pending(commands, continuation)
            state.withLock { $0.queue.append(pending) }
            deadlines.asyncAfter(deadline: .now() + .nanoseconds(Int(timeout.nanoseconds))) { [self] in
                if pending.finish(.failure(.timeout)) { markDown(RedisFailure.timeout.description) }
            }
            wake.signal()
        }
    }

    /// Why the last exchange failed, while commands are refused at once because of it (for
    /// `retryInterval` after a failure); nil otherwise.
    public var lastFailure: String? {
        state.withLock { !$0.connected && ContinuousClock.now < $0.retryAt ? $0.lastFailure : nil }
    }

    /// Ends the thread after what is queued; later commands fail at once.
    public func shutdown() {
        state.withLock { $0.stopped = true }
        wake.signal()
    }

    /// Returns once the thread has ended, after `shutdown()` (within `timeout`, the longest the
    /// thread waits on Redis), or after `limit`: whether it ended.
    @discardableResult
    public func waitUntilStopped(atMost limit: Duration) async -> Bool { await exit.wait(atMost: limit) }

    /// Whether the thread has ended.
    public var hasStopped: Bool { exit.hasExited }

    private func refusalWhileDown() -> RedisFailure? {
        state.withLock { state in
            if state.stopped { return .unavailable("the Redis client is stopped") }
            guard !state.connected, ContinuousClock.now < state.retryAt else { return nil }
            return .unavailable(state.lastFailure ?? "not connected")
        }
    }

    private func run() {
        var connection: RedisConnection?
        while true {
            wake.wait()
            let (batch, stopped) = state.withLock { state in
                defer { state.queue.removeAll() }
                return (state.queue.filter { !$0.isFinished }, state.stopped)
            }
            if stopped {
                batch.forEach { $0.finish(.failure(.unavailable("the Redis client is stopped"))) }
                return
            }
            guard !batch.isEmpty else { continue }
            do throws(RedisFailure) {
                if connection == nil {
                    connection = try RedisConnection(url, timeoutMilliseconds: Int(timeout.nanoseconds / 1_000_000))
                }
                let replies = try connection!.pipeline(batch.flatMap(\.commands))
                var offset = 0
                for pending in batch {
                    pending.finish(.success(Array(replies[offset..<(offset + pending.commands.count)])))
                    offset += pending.commands.count
                }
                state.withLock { $0.connected = true }
            } catch {
                connection = nil
                // Down first: a caller woken by its failure reads `lastFailure` at once.
                markDown(error.description)
                batch.forEach { $0.finish(.failure(error)) }
            }
        }
    }

    /// A failure: commands fail at once for `retryInterval` rather than each waiting.
    private func markDown(_ reason: String) {
        let retryAt = ContinuousClock.now + retryInterval
        state.withLock { state in
            state.connected = false
            state.lastFailure = reason
            state.retryAt = retryAt
        }
    }
}

extension Duration {
    var nanoseconds: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
}
