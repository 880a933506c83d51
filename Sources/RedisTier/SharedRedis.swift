public import Caching
import Foundation
public import Logging
import Redis
public import RedisVocabulary
public import Settings

/// The shared tier as Larder runs it: a Redis client for the tier's calls, a subscriber on
/// its channel (waking waiters and applying other replicas' purges here), what readiness
/// and metrics read of their state, and one log line each time Redis goes away or comes back.
public final class SharedRedis: Sendable {
    public let tier: SharedTier
    let client: RedisClient
    let subscriber: RedisSubscriber
    private let watcher: Task<Void, Never>

    public init(settings: ServeSettings, url: RedisURL, memory: MemoryTier, disk: DiskTier?, logger: Logger) {
        client = RedisClient(url: url, timeout: settings.redisTimeout)
        let channel = settings.redisPrefix + "events"
        let tier = SharedTier(store: RedisStore(client: client, channel: channel), prefix: settings.redisPrefix,
                              lockExpiry: settings.upstreamTimeout + .seconds(1), waitLimit: settings.upstreamTimeout,
                              memory: memory, disk: disk)
        self.tier = tier
        let subscriber = RedisSubscriber(url: url, channel: Array(channel.utf8), timeout: settings.redisTimeout) { message in
            Task { await tier.receive(message) }
        }
        self.subscriber = subscriber
        let client = client
        watcher = Task {
            var availability = RedisAvailability()
            while !Task.isCancelled {
                switch availability.observe(Self.problem(subscriber, client, tier)) {
                case .lost(let reason)?: logger.warning("shared tier (Redis) unavailable: \(reason); each replica works on its own tiers")
                case .back?: logger.info("shared tier (Redis) is back")
                case .connected?: logger.info("shared tier (Redis) connected at \(url)")
                case nil: break
                }
                try? await Task.sleep(for: .milliseconds(250))
            }
        }
    }

    /// Why Redis is not usable now, or nil when it is: the subscription is in place, the
    /// last command was answered (or none failed yet), and the last write was taken.
    public var problem: String? { Self.problem(subscriber, client, tier) }

    private static func problem(_ subscriber: RedisSubscriber, _ client: RedisClient, _ tier: SharedTier) -> String? {
        if !subscriber.isSubscribed { return subscriber.lastFailure ?? RedisAvailability.connecting }
        if let failure = client.lastFailure { return failure }
        return tier.writeProblem.map { "Redis refuses writes: \($0)" }
    }

    /// Stops the availability watch, waiting for it, and both Redis threads, and returns once the threads have
    /// ended (within the Redis timeout, or half a second), or after `stopLimit`: a thread in a
    /// connect to a host that drops packets is left to end with the process.
    public func shutdown() async {
        watcher.cancel()
        await watcher.value
        subscriber.shutdown()
        client.shutdown()
        async let subscriberEnded = subscriber.waitUntilStopped(atMost: Self.stopLimit)
        async let clientEnded = client.waitUntilStopped(atMost: Self.stopLimit)
        _ = await (subscriberEnded, clientEnded)
    }

    /// The longest a stop waits for the Redis threads: a share of the 8 s a stop has.
    static let stopLimit: Duration = .seconds(1)
}

/// Whether Redis is usable, as the log tells it: one line when it first connects, one when
/// it goes away (not one per request), one when it is back.
struct RedisAvailability {
    /// The problem while the first connection is being made: not yet a loss.
    static let connecting = "connecting"

    enum Change: Equatable {
        case connected
        case lost(String)
        case back
    }

    private enum State { case starting, up, down }
    private var state = State.starting

    /// The change a new reading of the problem (nil: usable) makes, if any.
    mutating func observe(_ problem: String?) -> Change? {
        switch (state, problem) {
        case (.starting, nil):
            state = .up
            return .connected
        case (.starting, Self.connecting?), (.up, nil), (.down, .some):
            return nil
        case (.starting, let reason?), (.up, let reason?):
            state = .down
            return .lost(reason)
        case (.down, nil):
            state = .up
            return .back
        }
    }
}
