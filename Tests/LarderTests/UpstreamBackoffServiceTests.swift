import Logging
import Foundation
import HTTPCore
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// Backoff seen from outside: a real Larder in front of a test upstream that asks for a
/// pause or fails on purpose, with the clock moved by the test.
@Suite(.timeLimit(.minutes(1))) struct UpstreamBackoffServiceTests {
    private func retryAfter(_ response: TestResponse) -> Int? {
        response.header("retry-after").flatMap { Int($0) }
    }

    @Test func a429WithRetryAfterInSecondsStopsRequestsUntilThen() async throws {
        let log = RecordedLog()
        try await withLarder(logger: log.logger()) { h in
            h.upstream.update { $0.status = 429; $0.extraHeaders = [("Retry-After", "30")] }
            let first = try await h.get("/weather?lat=1&lon=1")
            #expect(first.status == 503)
            #expect(first.header("content-type") == "application/problem+json")
            #expect(retryAfter(first) == 30)
            #expect(first.header("cache-status") == "larder; fwd=miss; fwd-status=429; detail=backoff")

            h.upstream.update { $0.status = 200; $0.extraHeaders = [] }
            h.clock.advance(by: 10)
            let refused = try await h.get("/weather?lat=2&lon=2")
            #expect(refused.status == 503)
            #expect(retryAfter(refused) == 20)
            #expect(refused.header("cache-status") == "larder; fwd=miss; detail=backoff")
            #expect(h.upstream.count("/v1/forecast") == 1)

            let ready = try await h.get("/readyz")
            #expect(ready.status == 200)
            #expect(ready.text.contains("\"upstream:weather\":[{\"status\":\"warn\",\"output\":\"backing off (answered 429 with Retry-After): reopens at "))
            #expect(log.messages(at: .warning).count == 1)
            #expect(log.messages(at: .warning).first?.hasPrefix("upstream weather backing off until ") == true)

            h.clock.advance(by: 20)
            #expect(try await h.get("/weather?lat=2&lon=2").status == 200)
            #expect(try await h.get("/weather?lat=3&lon=3").status == 200)
            #expect(h.upstream.count("/v1/forecast") == 3)
            #expect(try await h.get("/readyz").text.contains("\"upstream:weather\":[{\"status\":\"pass\"}]"))
            #expect(log.messages(at: .notice).contains("upstream weather reopened: the probe request was answered"))
            // The other upstream was never paused.
            #expect(try await h.get("/balance").status == 200)
        }
    }

    @Test func a503WithRetryAfterAsAnHTTPDateStopsRequestsUntilThatDate() async throws {
        try await withLarder { h in
            let date = HTTPDate.format(h.clock.now().addingTimeInterval(120))
            h.upstream.update { $0.status = 503; $0.extraHeaders = [("Retry-After", date)] }
            let first = try await h.get("/balance")
            #expect(first.status == 503)
            #expect((119...121).contains(retryAfter(first) ?? 0))
            h.upstream.update { $0.status = 200; $0.extraHeaders = [] }
            h.clock.advance(by: 60)
            let refused = try await h.get("/balance")
            #expect((59...61).contains(retryAfter(refused) ?? 0))
            #expect(h.upstream.count("/balance") == 1)
            h.clock.advance(by: 61)
            #expect(try await h.get("/balance").status == 200)
            #expect(h.upstream.count("/balance") == 2)
        }
    }

    @Test func a503WithoutRetryAfterPausesForTheBackoffAndDoublesWhileItContinues() async throws {
        try await withLarder { h in
            h.upstream.update { $0.status = 503 }
            let first = try await h.get("/weather?lat=1&lon=1")
            #expect(retryAfter(first) == 5)
            h.clock.advance(by: 5)
            // The probe fails too: twice as long.
            let failedProbe = try await h.get("/weather?lat=1&lon=1")
            #expect(retryAfter(failedProbe) == 10)
            #expect(h.upstream.count("/v1/forecast") == 2)
            h.clock.advance(by: 5)
            let during = try await h.get("/weather?lat=1&lon=1")
            #expect(retryAfter(during) == 5)
            #expect(h.upstream.count("/v1/forecast") == 2)
            h.clock.advance(by: 5)
            h.upstream.update { $0.status = 200 }
            #expect(try await h.get("/weather?lat=1&lon=1").status == 200)
            #expect(h.upstream.count("/v1/forecast") == 3)
        }
    }

    @Test func theBackoffSettingSetsTheFirstPause() async throws {
        try await withLarder({ $0.upstreamBackoff = .seconds(2) }) { h in
            h.upstream.update { $0.status = 503 }
            let paused = try await h.get("/balance")
            #expect(retryAfter(paused) == 2)
        }
    }

    @Test func onlyOneProbeGoesThroughAndItsSuccessReopens() async throws {
        try await withLarder { h in
            h.upstream.update { $0.status = 503 }
            _ = try await h.get("/weather?lat=1&lon=1")
            // The probe is held at the upstream while the others ask, however slow the machine.
            h.upstream.update { $0.status = 200; $0.delay = .seconds(3) }
            h.clock.advance(by: 5)
            let probe = Task { try await h.get("/weather?lat=10&lon=1").status }
            #expect(await eventually { h.upstream.count("/v1/forecast") == 2 })
            // Different keys, so the cache's own single flight does not join them.
            let statuses = try await withThrowingTaskGroup(of: (Int, Int?).self) { group in
                for i in 1..<4 {
                    group.addTask {
                        let response = try await h.get("/weather?lat=\(10 + i)&lon=1")
                        return (response.status, response.header("retry-after").flatMap { Int($0) })
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.filter { $0.0 == 503 && $0.1 == 1 }.count == 3, "\(statuses)")
            #expect(try await probe.value == 200)
            #expect(h.upstream.count("/v1/forecast") == 2)
            h.upstream.update { $0.delay = .zero }
            #expect(try await h.get("/weather?lat=20&lon=1").status == 200)
            #expect(try await h.get("/weather?lat=21&lon=1").status == 200)
            #expect(h.upstream.count("/v1/forecast") == 4)
        }
    }

    @Test func aStaleAnswerIsServedDuringABackoffWithoutAskingTheUpstream() async throws {
        try await withLarder { h in
            #expect(try await h.get("/weather?lat=1&lon=1").status == 200)
            h.clock.advance(by: 100)  // past max-age=60 and stale-while-revalidate, inside stale-if-error
            h.upstream.update { $0.status = 503 }
            let first = try await h.get("/weather?lat=1&lon=1")
            #expect(first.status == 200)
            #expect(first.header("cache-status") == "larder; fwd=stale; fwd-status=503; detail=stale-if-error")
            let during = try await h.get("/weather?lat=1&lon=1")
            #expect(during.status == 200)
            #expect(during.header("cache-status") == "larder; fwd=stale; detail=stale-if-error")
            #expect(h.upstream.count("/v1/forecast") == 2)
            let uncached = try await h.get("/weather?lat=2&lon=2")
            #expect(uncached.status == 503)
            #expect(h.upstream.count("/v1/forecast") == 2)
        }
    }

    @Test func fiveRequestsInARowWithoutAnAnswerPauseTheUpstream() async throws {
        let log = RecordedLog()
        // Reads each request and resets the connection: no answer, on a port no other test can take.
        let silent = try RawServer { fd, _ in
            _ = RawServer.readHead(fd)
            RawServer.reset(fd)
        }
        defer { silent.stop() }
        try await withLarder(logger: log.logger(level: .warning), { $0.weatherURL = "http://127.0.0.1:\(silent.port)/v1/forecast" }) { h in
            for i in 0..<5 { #expect(try await h.get("/weather?lat=\(i)&lon=1").status == 502) }
            let paused = try await h.get("/weather?lat=9&lon=1")
            #expect(paused.status == 503)
            #expect(retryAfter(paused) == 5)
            #expect(silent.connectionsAccepted == 5)
            let metrics = try await h.get("/metrics").text
            #expect(metrics.contains("larder_upstream_requests_total{upstream=\"weather\",outcome=\"error\"} 5"))
            #expect(metrics.contains("larder_upstream_backoffs_total{upstream=\"weather\"} 1"))
            #expect(metrics.contains("larder_upstream_backoff_refusals_total{upstream=\"weather\"} 1"))
            // One line per failed request, and one for the pause.
            let pauses = log.messages(at: .warning).filter { $0.contains(" backing off until ") }
            #expect(pauses.count == 1)
            #expect(pauses.first?.hasSuffix(": 5 requests in a row got no answer") == true)
            #expect(log.messages(at: .warning).filter { $0.hasPrefix("upstream weather request failed: ") }.count == 5)
        }
    }

    @Test func aPassThroughOriginsStatusesAreRelayedWithoutPausingIt() async throws {
        let origin = try TestUpstream()
        // Not stored, so each request goes to the origin.
        origin.update { $0.status = 503; $0.extraHeaders = [("Retry-After", "60"), ("Cache-Control", "no-store")] }
        try await withLarder(upstream: origin, { $0.routes = [RouteMount("/p=http://127.0.0.1:\(origin.port)")!] }) { h in
            for _ in 0..<3 {
                let relayed = try await h.get("/p/v1/forecast")
                #expect(relayed.status == 503)
                #expect(relayed.header("retry-after") == "60")
                #expect(relayed.header("cache-status") == "larder; fwd=miss; fwd-status=503")
            }
            #expect(origin.requests.count == 3)
        }
        await origin.stop()
    }

    @Test func aPassThroughOriginThatCutsEveryReplyIsNotPausedButOneThatCannotBeReachedIs() async throws {
        // Reads each request and resets the connection: reached, but no whole reply.
        let cutting = try RawServer { fd, _ in
            _ = RawServer.readHead(fd)
            RawServer.reset(fd)
        }
        defer { cutting.stop() }
        let unreachable = closedPort()
        try await withLarder({
            $0.routes = [RouteMount("/cut=http://127.0.0.1:\(cutting.port)")!, RouteMount("/gone=http://127.0.0.1:\(unreachable)")!]
        }) { h in
            for i in 0..<8 { #expect(try await h.get("/cut/\(i)").status == 502) }
            #expect(cutting.connectionsAccepted == 8)
            for i in 0..<5 {
                let refused = try await h.get("/gone/\(i)")
                #expect(refused.status == 502, "\(i): \(refused.status) \(refused.header("cache-status") ?? "-")")
            }
            let paused = try await h.get("/gone/9")
            #expect(paused.status == 503)
            #expect(paused.header("cache-status")?.hasSuffix("detail=backoff") == true)
            // Each route has its own backoff: the cutting origin is still asked.
            #expect(try await h.get("/cut/9").status == 502)
            #expect(cutting.connectionsAccepted == 9)
        }
    }
}
