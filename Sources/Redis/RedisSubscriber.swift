#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import Locking
public import RedisVocabulary

/// Listens on one Redis pub/sub channel from a thread of its own and hands each message to
/// `receive`. When the connection breaks it connects again every `retryInterval`, for as
/// long as it runs; messages published meanwhile are missed (pub/sub keeps none), which
/// is why whoever waits on a message also polls.
public final class RedisSubscriber: Sendable {
    public let url: RedisURL
    public let channel: [UInt8]
    private let timeout: Duration
    private let retryInterval: Duration
    private let receive: @Sendable ([UInt8]) -> Void
    private let state = Locked((stopped: false, subscribed: false, lastFailure: String?.none))
    private let exit = ThreadExit()

    public init(url: RedisURL, channel: [UInt8], timeout: Duration, retryInterval: Duration = .seconds(1),
                receive: @escaping @Sendable ([UInt8]) -> Void) {
        self.url = url
        self.channel = channel
        self.timeout = timeout
        self.retryInterval = retryInterval
        self.receive = receive
        let thread = Thread { [self] in
            run()
            exit.exited()
        }
        thread.name = "larder-redis-sub"
        thread.start()
    }

    /// Whether the subscription is in place now.
    public var isSubscribed: Bool { state.withLock { $0.subscribed } }
    public var lastFailure: String? { state.withLock { $0.subscribed ? nil : $0.lastFailure } }

    /// Ends the thread within half a second (or the connection's `timeout`, while it connects).
    public func shutdown() { state.withLock { $0.stopped = true } }

    /// Returns once the thread has ended, after `shutdown()`, or after `limit`: whether it ended.
    @discardableResult
    public func waitUntilStopped(atMost limit: Duration) async -> Bool { await exit.wait(atMost: limit) }

    /// Whether the thread has ended.
    public var hasStopped: Bool { exit.hasExited }

    private var stopped: Bool { state.withLock { $0.stopped } }

    private func run() {
        while !stopped {
            do throws(RedisFailure) {
                try listen(RedisConnection(url, timeoutMilliseconds: Int(timeout.nanoseconds / 1_000_000)))
            } catch {
                state.withLock { state in
                    state.subscribed = false
                    state.lastFailure = error.description
                }
            }
            var waited = Duration.zero
            while waited < retryInterval, !stopped {
                usleep(50_000)
                waited += .milliseconds(50)
            }
        }
    }

    /// Subscribes, then hands on messages until the connection fails or the subscriber stops.
    private func listen(_ connection: RedisConnection) throws(RedisFailure) {
        let confirmation = try connection.pipeline([[Array("SUBSCRIBE".utf8), channel]])
        guard case .array(let parts)? = confirmation.first, parts.first == .bytes(Array("subscribe".utf8)) else {
            if case .error(let message)? = confirmation.first { throw .unavailable("Redis refused the subscription: \(message)") }
            throw .unavailable("Redis did not confirm the subscription")
        }
        state.withLock { $0.subscribed = true }
        while !stopped {
            if let reply = try connection.bufferedReply() {
                // ["message", channel, payload]; anything else on this connection is ignored.
                if case .array(let parts) = reply, parts.count == 3, parts[0] == .bytes(Array("message".utf8)),
                   case .bytes(let payload) = parts[2] {
                    receive(payload)
                }
                continue
            }
            var ready = pollfd(fd: connection.fileDescriptor, events: Int16(POLLIN), revents: 0)
            let polled = poll(&ready, 1, 500)
            if polled < 0, errno != EINTR { throw .unavailable("poll failed on the Redis subscription: errno \(errno)") }
            if polled > 0 { try connection.readSocket() }
        }
    }
}
