import Foundation
import HTTPCore
import Bodies
import HTTPServer
import Testing
import TestSupport
@testable import Larder
@testable import Caching
import Logging
import Redis
import RedisVocabulary
@testable import Settings

/// The shared tier across replicas, with a real `redis-server` on a free port: several
/// Larder services (each with its own memory and disk, as separate replicas have) in front
/// of one counting upstream, and a replica in a child process where one must die.
@Suite(.serialized, .timeLimit(.minutes(2))) struct RedisTierTests {
    /// A fresh `redis-server` and test upstream, and `count` replicas sharing both (each also
    /// started with `configure`); everything is stopped afterwards.
    static func withReplicas(_ count: Int, logger: Logger = ServiceHarness.quietLogger(),
                             _ configure: @escaping (inout ServeSettings) -> Void = { _ in },
                             _ body: (_ replicas: [ServiceHarness], _ upstream: TestUpstream, _ redis: RedisServer) async throws -> Void)
        async throws {
        let redis = try await RedisServer()
        defer { redis.stop() }
        let upstream = try TestUpstream()
        var replicas: [ServiceHarness] = []
        do {
            for _ in 0..<count {
                replicas.append(try ServiceHarness.start(upstream: upstream, logger: logger) { settings in
                    settings.redisURL = RedisURL(redis.url)
                    // Generous: the parallel test run can hold a reply up; the tests of slow Redis set their own.
                    settings.redisTimeout = .seconds(1)
                    configure(&settings)
                })
            }
            try await waitUntilShared(replicas)
            try await body(replicas, upstream, redis)
        } catch {
            for replica in replicas { await replica.stop() }
            await upstream.stop()
            throw error
        }
        for replica in replicas { await replica.stop() }
        await upstream.stop()
    }

    /// Until every replica reports Redis usable (its subscription is in place).
    static func waitUntilShared(_ replicas: [ServiceHarness], within limit: Duration = .seconds(10)) async throws {
        let deadline = ContinuousClock.now + limit
        for replica in replicas {
            while try await replica.get("/readyz").text.contains("working without the shared tier") {
                guard ContinuousClock.now < deadline else { throw TestClientError("Redis never became usable") }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    @Test func twentyConcurrentRequestsOnEachOfThreeReplicasMakeOneUpstreamRequest() async throws {
        try await Self.withReplicas(3) { replicas, upstream, _ in
            upstream.update { $0.delay = .milliseconds(300) }
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for replica in replicas {
                    for _ in 0..<20 { group.addTask { try await replica.get("/weather?lat=10&lon=20").status } }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.count == 60)
            #expect(statuses.allSatisfy { $0 == 200 })
            #expect(upstream.count("/v1/forecast") == 1)
            var waits = 0.0
            for replica in replicas { waits += metricValue("larder_redis_waits_total", in: try await replica.get("/metrics").text) }
            #expect(waits > 0)
        }
    }

    @Test func anAnswerFetchedThroughOneReplicaIsARedisHitOnAnother() async throws {
        try await Self.withReplicas(2) { replicas, upstream, _ in
            let first = try await replicas[0].get("/weather?lat=52.52&lon=13.41")
            #expect(first.header("Cache-Status")?.contains("fwd=miss") == true)
            let shared = try await replicas[1].get("/weather?lat=52.52&lon=13.41")
            #expect(shared.status == 200)
            #expect(shared.header("Cache-Status")?.contains("hit") == true)
            #expect(shared.header("Cache-Status")?.contains("detail=redis") == true)
            #expect(shared.body == first.body)
            #expect(shared.header("ETag") == first.header("ETag"))
            // Promoted: the next answer on that replica comes from its own memory.
            let promoted = try await replicas[1].get("/weather?lat=52.52&lon=13.41")
            #expect(promoted.header("Cache-Status")?.contains("detail=memory") == true)
            #expect(upstream.count("/v1/forecast") == 1)
            let metrics = try await replicas[1].get("/metrics").text
            #expect(metrics.contains("larder_cache_lookups_total{tier=\"redis\",result=\"hit\"} 1"))
            #expect(metrics.contains("larder_redis_up 1"))
        }
    }

    @Test func twoHundredKeysRoundRobinOverThreeReplicasTwiceMakeTwoHundredUpstreamRequests() async throws {
        try await Self.withReplicas(3) { replicas, upstream, _ in
            for round in 0..<2 {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for worker in 0..<8 {
                        group.addTask {
                            for key in stride(from: worker, to: 200, by: 8) {
                                let answer = try await replicas[(key + round) % 3].get("/weather?lat=\(key % 90)&lon=\(key - 100)")
                                guard answer.status == 200 else { throw TestClientError("key \(key): \(answer.status)") }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            #expect(upstream.count("/v1/forecast") == 200)
        }
    }

    @Test func whenTheLockHolderIsKilledTheOthersStillAnswer() async throws {
        try await Self.withReplicas(2, { $0.upstreamTimeout = .seconds(2) }) { replicas, upstream, redis in
            upstream.update { $0.delay = .seconds(1) }
            // The holder: a real process, killed with SIGKILL while its fetch is in flight.
            let holder = try LarderProcess(["serve", "--port", "0", "--weather-url", upstream.weatherURL, "--redis-url", redis.url,
                                            "--upstream-timeout", "2s", "--log-level", "info"])
            let holderPort = try await holder.waitForPort()
            let lead = Task { try? await TestClient(port: holderPort).get("/weather?lat=7&lon=7") }
            // Until the holder's request reached the upstream: it holds the lock now.
            let deadline = ContinuousClock.now + .seconds(10)
            while upstream.count("/v1/forecast") == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            let started = ContinuousClock.now
            let waiting = replicas.map { replica in Task { try await replica.get("/weather?lat=7&lon=7") } }
            try await Task.sleep(for: .milliseconds(200))
            holder.signal(SIGKILL)
            _ = await holder.waitForExit()
            lead.cancel()
            for task in waiting {
                let answer = try await task.value
                #expect(answer.status == 200)
            }
            // Within the upstream timeout (2 s) plus the lock's expiry (3 s), with room for a busy machine.
            #expect(ContinuousClock.now - started < .seconds(8))
        }
    }
}

extension RedisTierTests {
    @Test func whenRedisStopsEveryRequestIsStillAnsweredAndSharingResumesWhenItIsBack() async throws {
        let log = RecordedLog()
        try await Self.withReplicas(2, logger: log.logger()) { replicas, upstream, redis in
            upstream.update { $0.delay = .milliseconds(50) }
            // Load on new keys while Redis goes away; each answer within the Redis timeout
            // (1 s here) for each call made of it plus the upstream time.
            let load = Task {
                var slowest = Duration.zero
                for key in 0..<60 {
                    let started = ContinuousClock.now
                    let answer = try await replicas[key % 2].get("/weather?lat=\(key % 90)&lon=44")
                    guard answer.status == 200 else { throw TestClientError("key \(key): \(answer.status)") }
                    slowest = max(slowest, ContinuousClock.now - started)
                }
                return slowest
            }
            try await Task.sleep(for: .milliseconds(300))
            redis.stop()
            let slowest = try await load.value
            #expect(slowest < .seconds(5))
            let ready = try await replicas[0].get("/readyz")
            #expect(ready.status == 200)
            #expect(ready.text.contains("\"redis\":[{\"status\":\"warn\""))

            try await redis.restart()
            try await Self.waitUntilShared(replicas, within: .seconds(15))
            let before = upstream.count("/v1/forecast")
            // A request or two may still meet the wait before reconnecting: retry briefly.
            var shared = false
            for attempt in 0..<20 where !shared {
                _ = try await replicas[0].get("/weather?lat=33&lon=\(attempt)")
                shared = try await replicas[1].get("/weather?lat=33&lon=\(attempt)").header("Cache-Status")?.contains("detail=redis") == true
                if !shared { try await Task.sleep(for: .milliseconds(250)) }
            }
            #expect(shared)
            #expect(upstream.count("/v1/forecast") > before)
            // Each replica said once that Redis went away, and once that it is back (its
            // watcher looks four times a second).
            var lines: [String] = []
            for _ in 0..<20 {
                lines = log.all.map(\.message).filter { $0.hasPrefix("shared tier (Redis)") }
                if lines.filter({ $0 == "shared tier (Redis) is back" }).count >= 2 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(lines.filter { $0.hasPrefix("shared tier (Redis) unavailable: ") }.count == 2, "\(lines)")
            #expect(lines.filter { $0 == "shared tier (Redis) is back" }.count == 2, "\(lines)")
            #expect(log.all.filter { $0.message.hasPrefix("shared tier (Redis) unavailable") }.allSatisfy { $0.level == .warning })
        }
    }

    /// A Redis at `maxmemory` with `noeviction` answers reads and refuses every write: that is
    /// no shared tier, and readiness and `larder_redis_up` say so until writes succeed again.
    @Test func aRedisThatRefusesWritesIsReportedUntilItTakesThemAgain() async throws {
        try await Self.withReplicas(1) { replicas, _, redis in
            let admin = RedisClient(url: RedisURL(redis.url)!, timeout: .seconds(2))
            defer { admin.shutdown() }
            let word = { (text: String) in Array(text.utf8) }
            _ = try await admin.pipeline([[word("CONFIG"), word("SET"), word("maxmemory-policy"), word("noeviction")],
                                          [word("CONFIG"), word("SET"), word("maxmemory"), word("1")]]).get()
            #expect(try await replicas[0].get("/weather?lat=7&lon=7").status == 200)
            try await Task.sleep(for: .milliseconds(300))  // the write goes on after the answer
            let ready = try await replicas[0].get("/readyz")
            #expect(ready.status == 200 && ready.text.contains("Redis refuses writes"), "\(ready.text)")
            #expect(metricValue("larder_redis_up", in: try await replicas[0].get("/metrics").text) == 0)

            _ = try await admin.pipeline([[word("CONFIG"), word("SET"), word("maxmemory"), word("0")]]).get()
            #expect(try await replicas[0].get("/weather?lat=8&lon=8").status == 200)
            try await Self.waitUntilShared(replicas)
            #expect(metricValue("larder_redis_up", in: try await replicas[0].get("/metrics").text) == 1)
        }
    }

    /// A value planted in Redis with a valid checksum and fields that would frame the answer
    /// anew (`Transfer-Encoding: chunked`): checked like an origin's answer, it is no entry,
    /// and two pipelined requests get exactly two responses.
    @Test func aPlantedValueWithFramingFieldsIsNotServed() async throws {
        try await Self.withReplicas(2) { replicas, upstream, redis in
            #expect(try await replicas[0].get("/weather?lat=9&lon=9").status == 200)
            try await Task.sleep(for: .milliseconds(300))
            let admin = RedisClient(url: RedisURL(redis.url)!, timeout: .seconds(5))
            defer { admin.shutdown() }
            let word = { (text: String) in Array(text.utf8) }
            guard case .array(let keys) = try await admin.pipeline([[word("KEYS"), word("larder:entry:*")]]).get()[0],
                  let key = keys.first?.bytesValue, case .bytes(let value) = try await admin.pipeline([[word("GET"), key]]).get()[0],
                  let stored = DiskEntryCodec.decodeKeyed(value) else {
                Issue.record("no stored entry in Redis")
                return
            }
            let planted = CacheEntry(status: 200, headers: stored.entry.headers + [("Transfer-Encoding", "chunked")],
                                     body: Array("0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".utf8),
                                     requestTime: stored.entry.requestTime, responseTime: stored.entry.responseTime)
            _ = try await admin.pipeline([[word("SET"), key, DiskEntryCodec.encode(key: stored.key, entry: planted)]]).get()
            let client = try TestClient(port: replicas[1].port)
            try client.send(String(repeating: "GET /weather?lat=9&lon=9 HTTP/1.1\r\nHost: l\r\n\r\n", count: 2))
            for _ in 0..<2 {
                let answer = try await client.readResponse()
                #expect(answer.status == 200 && answer.header("Transfer-Encoding") == nil && answer.text.contains("\"temperature\""))
            }
            #expect(!(try client.peekAvailable()))
            #expect(metricValue("larder_redis_corrupt_values_total", in: try await replicas[1].get("/metrics").text) == 1)
            #expect(upstream.count("/v1/forecast") == 2)
        }
    }

    /// A value planted in Redis far larger than any entry is read only up to the tier's
    /// limit, counted as corrupt, removed, and the key fetched again.
    @Test func aPlantedValueLargerThanAnyEntryIsNeverReadWhole() async throws {
        try await Self.withReplicas(2) { replicas, upstream, redis in
            #expect(try await replicas[0].get("/weather?lat=9&lon=9").status == 200)
            try await Task.sleep(for: .milliseconds(300))
            let admin = RedisClient(url: RedisURL(redis.url)!, timeout: .seconds(5))
            defer { admin.shutdown() }
            let word = { (text: String) in Array(text.utf8) }
            guard case .array(let keys) = try await admin.pipeline([[word("KEYS"), word("larder:entry:*")]]).get()[0],
                  let key = keys.first?.bytesValue, keys.count == 1 else {
                Issue.record("no single stored entry in Redis")
                return
            }
            let planted = [UInt8](repeating: 0x41, count: SharedTier.largestValue + 4096)
            _ = try await admin.pipeline([[word("SET"), key, planted]]).get()
            let answer = try await replicas[1].get("/weather?lat=9&lon=9")
            #expect(answer.status == 200 && answer.header("Cache-Status")?.contains("detail=redis") != true)
            #expect(metricValue("larder_redis_corrupt_values_total", in: try await replicas[1].get("/metrics").text) == 1)
            #expect(upstream.count("/v1/forecast") == 2)
        }
    }

    /// A server on the Redis port that is not Redis: it answers `reply` to whatever it is sent,
    /// or nothing at all (nil).
    static func fakeRedis(answering reply: String?) throws -> RawServer {
        try RawServer { fd, server in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&ready, 1, 100) >= 0 else { break }
                if ready.revents == 0 { continue }
                let n = read(fd, &buffer, buffer.count)
                guard n > 0 else { break }
                if let reply { RawServer.send(fd, reply) }
            }
        }
    }

    @Test(arguments: [
        ("garbage", "?? this is not redis\r\n"),
        ("stall", nil),
        ("corrupt values", "$5\r\nhello\r\n"),
    ] as [(String, String?)])
    func aServerThatIsNotRedisCostsAtMostTheTimeoutAndStoresNothingBad(_ kind: String, _ reply: String?) async throws {
        let fake = try Self.fakeRedis(answering: reply)
        defer { fake.stop() }
        let upstream = try TestUpstream()
        try await withLarder(upstream: upstream, { settings in
            settings.redisURL = RedisURL("redis://127.0.0.1:\(fake.port)")
            settings.redisTimeout = .milliseconds(150)
        }) { h in
            for key in 0..<3 {
                let started = ContinuousClock.now
                let answer = try await h.get("/weather?lat=5&lon=\(key)")
                #expect(answer.status == 200, "\(kind)")
                #expect(answer.text.contains("\"temperature\""), "\(kind)")
                // Lookup, lock and store: three calls of at most 150 ms each, plus the upstream.
                #expect(ContinuousClock.now - started < .seconds(2), "\(kind)")
            }
            // What was fetched is served from this replica's own tiers, not from the fake.
            let again = try await h.get("/weather?lat=5&lon=0")
            #expect(again.header("Cache-Status")?.contains("detail=memory") == true, "\(kind)")
            #expect(upstream.count("/v1/forecast") == 3, "\(kind)")
            let ready = try await h.get("/readyz")
            #expect(ready.status == 200, "\(kind)")
            #expect(ready.text.contains("working without the shared tier"), "\(kind)")
            let metrics = try await h.get("/metrics").text
            #expect(metricValue("larder_redis_errors_total", in: metrics) + metricValue("larder_redis_corrupt_values_total", in: metrics) > 0,
                    "\(kind)")
            if reply == "$5\r\nhello\r\n" { #expect(metricValue("larder_redis_corrupt_values_total", in: metrics) > 0) }
        }
        await upstream.stop()
    }

    @Test func anInvalidationOnOneReplicaReachesTheOthers() async throws {
        let origin = try TestOrigin { request in
            HTTPResponse(status: request.method == .post ? 201 : 200, headers: HTTPHeaders([("Cache-Control", "max-age=600")]),
                         body: "v\(request.method)")
        }
        try await Self.withReplicas(2, { $0.routes = [RouteMount("/api=\(origin.url)")!] }) { replicas, _, _ in
            _ = try await replicas[0].get("/api/item")
            let cached = try await replicas[1].get("/api/item")
            #expect(cached.header("Cache-Status")?.contains("hit") == true)
            _ = try await replicas[1].get("/api/item")  // now in B's memory
            let post = try await replicas[0].get("/api/item", method: "POST")
            #expect(post.status == 201)
            var seen: [String] = []
            let invalidated = try await Self.eventually {
                let status = try await replicas[1].get("/api/item").header("Cache-Status") ?? ""
                seen.append(status)
                return status.contains("fwd=miss")
            }
            #expect(invalidated, "B answered \(Set(seen))")
        }
        await origin.stop()
    }

    @Test func anAdminPurgeOnOneReplicaReachesTheOthersAndRedis() async throws {
        try await Self.withReplicas(2, AdminTests.admin) { replicas, upstream, _ in
            _ = try await replicas[0].get("/weather?lat=52.52&lon=13.41")
            _ = try await replicas[1].get("/weather?lat=52.52&lon=13.41")
            let purge = try await AdminTests.admin(replicas[0], "PURGE", "/weather?lat=52.5201&lon=13.41")
            #expect(purge.status == 200)
            #expect(purge.text == "{\"purged\":1}")
            #expect(try await Self.eventually {
                try await replicas[1].get("/weather?lat=52.52&lon=13.41").header("Cache-Status")?.contains("fwd=miss") == true
            })
            #expect(upstream.count("/v1/forecast") == 2)
        }
    }

    /// Whether `condition` holds within five seconds, asked every 50 ms.
    static func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }
}

extension TestClient {
    /// One GET on this connection.
    func get(_ target: String) async throws -> TestResponse {
        try send("GET \(target) HTTP/1.1\r\nHost: larder\r\n\r\n")
        return try await readResponse()
    }
}
