import Caching
import Foundation
import Redis

/// The shared tier as Larder runs it: a Redis client for the tier's calls, a subscriber on
/// its channel (waking waiters and applying other replicas' purges here), and what
/// readiness and metrics read of their state.
final class SharedRedis: Sendable {
    let tier: SharedTier
    let client: RedisClient
    let subscriber: RedisSubscriber

    init(settings: ServeSettings, url: RedisURL, memory: MemoryTier, disk: DiskTier?) {
        client = RedisClient(url: url, timeout: settings.redisTimeout)
        let channel = settings.redisPrefix + "events"
        let tier = SharedTier(store: RedisStore(client: client, channel: channel), prefix: settings.redisPrefix,
                              lockExpiry: settings.upstreamTimeout + .seconds(1), waitLimit: settings.upstreamTimeout,
                              memory: memory, disk: disk)
        self.tier = tier
        subscriber = RedisSubscriber(url: url, channel: Array(channel.utf8), timeout: settings.redisTimeout) { message in
            Task { await tier.receive(message) }
        }
    }

    /// Why Redis is not usable now, or nil when it is: the subscription is in place and the
    /// last command was answered (or none failed yet).
    var problem: String? {
        if !subscriber.isSubscribed { return subscriber.lastFailure ?? "connecting" }
        return client.lastFailure
    }

    func shutdown() {
        subscriber.shutdown()
        client.shutdown()
    }
}
