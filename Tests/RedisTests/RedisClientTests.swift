import Foundation
import Redis
import RedisVocabulary
import Synchronization
import Testing
import TestSupport

/// The client against a real redis-server: replies come back in order and byte for byte,
/// a stopped server costs at most the timeout, and the client finds the server again.
@Suite(.serialized, .timeLimit(.minutes(1))) struct RedisClientTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func aPipelineAnswersEachCommandInOrderWithBinaryValuesIntact() async throws {
        let redis = try await RedisServer()
        defer { redis.stop() }
        let client = RedisClient(url: try #require(RedisURL(redis.url)), timeout: .seconds(2))
        defer { client.shutdown() }
        let value: [UInt8] = [0, 13, 10, 0xFF] + Array(repeating: 0x61, count: 100_000)
        let replies = try await client.pipeline([
            [Self.bytes("SET"), Self.bytes("k"), value],
            [Self.bytes("GET"), Self.bytes("k")],
            [Self.bytes("GET"), Self.bytes("absent")],
            [Self.bytes("INCR"), Self.bytes("n")],
            [Self.bytes("NOSUCHCOMMAND")],
        ]).get()
        #expect(replies.count == 5)
        #expect(replies[0] == .status("OK"))
        #expect(replies[1].bytesValue == value)
        #expect(replies[2] == .null)
        #expect(replies[3] == .integer(1))
        guard case .error(let message) = replies[4] else { Issue.record("expected an error reply, got \(replies[4])"); return }
        #expect(message.contains("unknown command"))
    }

    @Test func aStoppedServerIsAFailureNotAWaitAndTheClientReconnects() async throws {
        let redis = try await RedisServer()
        defer { redis.stop() }
        let client = RedisClient(url: try #require(RedisURL(redis.url)), timeout: .milliseconds(500), retryInterval: .seconds(1))
        defer { client.shutdown() }
        #expect(try await client.command([Self.bytes("PING")]).get() == .status("PONG"))
        redis.kill()
        let start = ContinuousClock.now
        let refused = await client.command([Self.bytes("PING")])
        #expect(ContinuousClock.now - start < .seconds(3))
        guard case .failure = refused else { Issue.record("a stopped server answered: \(refused)"); return }
        #expect(client.lastFailure != nil)
        try await redis.restart()
        var answered = false
        for _ in 0..<50 where !answered {
            answered = (try? await client.command([Self.bytes("PING")]).get()) == .status("PONG")
            if !answered { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(answered)
        #expect(client.lastFailure == nil)
    }

    @Test func aSubscriberReceivesWhatIsPublishedOnItsChannelOnly() async throws {
        let redis = try await RedisServer()
        defer { redis.stop() }
        let url = try #require(RedisURL(redis.url))
        let received = Mutex<[[UInt8]]>([])
        let subscriber = RedisSubscriber(url: url, channel: Self.bytes("larder:test"), timeout: .seconds(2)) { message in
            received.withLock { $0.append(message) }
        }
        defer { subscriber.shutdown() }
        let client = RedisClient(url: url, timeout: .seconds(2))
        defer { client.shutdown() }
        for _ in 0..<100 where !subscriber.isSubscribed { try await Task.sleep(for: .milliseconds(50)) }
        #expect(subscriber.isSubscribed)
        _ = try await client.command([Self.bytes("PUBLISH"), Self.bytes("other"), Self.bytes("not for us")]).get()
        _ = try await client.command([Self.bytes("PUBLISH"), Self.bytes("larder:test"), Self.bytes("purge k")]).get()
        for _ in 0..<100 where received.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(20)) }
        #expect(received.withLock { $0 } == [Self.bytes("purge k")])
    }

    /// A stop can wait for both threads: connected, or with no Redis to connect to (the
    /// subscriber between attempts), each ends within its bound once asked.
    @Test func bothThreadsEndSoonAfterTheyAreAskedTo() async throws {
        let redis = try await RedisServer()
        let url = try #require(RedisURL(redis.url))
        let subscriber = RedisSubscriber(url: url, channel: Self.bytes("larder:test"), timeout: .milliseconds(200)) { _ in }
        let client = RedisClient(url: url, timeout: .milliseconds(200))
        for _ in 0..<100 where !subscriber.isSubscribed { try await Task.sleep(for: .milliseconds(50)) }
        _ = try await client.command([Self.bytes("PING")]).get()
        #expect(!subscriber.hasStopped && !client.hasStopped)
        let started = ContinuousClock.now
        subscriber.shutdown()
        client.shutdown()
        #expect(await subscriber.waitUntilStopped(atMost: .seconds(5)))
        #expect(await client.waitUntilStopped(atMost: .seconds(5)))
        #expect(subscriber.hasStopped && client.hasStopped)
        #expect(started.duration(to: .now) < .seconds(3), "a poll lasts 500 ms, a Redis call 200 ms")
        redis.stop()

        let unreachable = RedisSubscriber(url: url, channel: Self.bytes("larder:test"), timeout: .milliseconds(200)) { _ in }
        try await Task.sleep(for: .milliseconds(300))
        #expect(!unreachable.isSubscribed && !unreachable.hasStopped)
        unreachable.shutdown()
        #expect(await unreachable.waitUntilStopped(atMost: .seconds(5)))
        #expect(unreachable.hasStopped)
    }
}
