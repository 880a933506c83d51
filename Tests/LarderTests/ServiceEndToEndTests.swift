import HTTPCore
import Bodies
import HTTPServer
import Logging
import Settings
import Foundation
import Testing
import TestSupport
@testable import Larder
@testable import Observability
@testable import AccessLogging
@testable import Routes

func json(_ response: TestResponse) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
}

@Suite(.timeLimit(.minutes(1))) struct ServiceEndToEndTests {
    @Test func weatherBodyAndHeaders() async throws {
        try await withLarder { h in
            let response = try await h.get("/weather?lat=52.52&lon=13.41")
            #expect(response.status == 200)
            #expect(response.text == "{\"latitude\":52.52,\"longitude\":13.41,\"temperature\":3.2,\"temperatureUnit\":\"°C\","
                    + "\"weatherCode\":3,\"condition\":\"Overcast\",\"lastUpdate\":\"2026-11-21T20:45:00Z\"}")
            #expect(response.header("content-type") == "application/json")
            #expect(response.header("cache-control") == "public, max-age=60, stale-while-revalidate=30, stale-if-error=86400")
            // The upstream's Date has one-second resolution, so apparent_age (RFC 9111 §4.2.3) may reach 1.
            #expect(["0", "1"].contains(response.header("age")))
            #expect(response.header("etag")?.wholeMatch(of: /"[0-9a-f]{32}"/) != nil)
            #expect(response.header("cache-status") == "larder; fwd=miss; fwd-status=200; stored")
            #expect(response.header("date") != nil)
            #expect(response.header("content-length") == String(response.body.count))
            let asked = try #require(h.upstream.requests.first)
            #expect(asked.query == "latitude=52.52&longitude=13.41&current=temperature_2m,weather_code")
            #expect(asked.headers["user-agent"]?.hasPrefix("larder/") == true)
        }
    }

    @Test func balanceBodyAndHeaders() async throws {
        try await withLarder { h in
            let response = try await h.get("/balance")
            #expect(response.status == 200)
            #expect(response.text == "{\"balance\":1234.56,\"lastUpdate\":\"2021-06-02T11:01:48Z\"}")
            #expect(response.header("cache-control") == "private, max-age=60")
            #expect(response.header("cache-status") == "larder; fwd=miss; fwd-status=200; stored")
        }
    }

    @Test func overviewCombinesBothWithTheShorterLifetimeAndTheOlderAge() async throws {
        try await withLarder { h in
            _ = try await h.get("/weather?lat=52.52&lon=13.41")
            h.clock.advance(by: 20.5)
            h.upstream.update { $0.maxAge = 30 }
            _ = try await h.get("/balance")
            let response = try await h.get("/overview?lat=52.52&lon=13.41")
            #expect(response.status == 200)
            let body = try json(response)
            #expect((body["weather"] as? [String: Any])?["condition"] as? String == "Overcast")
            #expect((body["balance"] as? [String: Any])?["balance"] as? Double == 1234.56)
            // Its age is the older part's, and it stays fresh as long as both do: max-age is
            // the shorter remaining lifetime plus that age.
            let age = try #require(response.header("age").flatMap(Int.init))
            #expect(age >= 19 && age <= 21)  // the weather part's age, not the balance's 0
            #expect(response.header("cache-status")?.hasPrefix("larder; hit") == true)
            func remaining(_ part: TestResponse) throws -> Int {
                let maxAge = try #require(part.header("cache-control")?.split(separator: "=").last.flatMap { Int($0) })
                return maxAge - (part.header("age").flatMap(Int.init) ?? 0)
            }
            let shorter = min(try remaining(try await h.get("/weather?lat=52.52&lon=13.41")), try remaining(try await h.get("/balance")))
            #expect(response.header("cache-control") == "private, max-age=\(shorter + age)")
        }
    }

    @Test(arguments: [
        ("/weather?lon=13.41", "lat"), ("/weather?lat=52.52", "lon"), ("/weather?lat=abc&lon=1", "lat"),
        ("/weather?lat=NaN&lon=1", "lat"), ("/weather?lat=1&lon=inf", "lon"), ("/weather?lat=90.01&lon=1", "lat"),
        ("/weather?lat=1&lon=-180.5", "lon"), ("/weather?lat=1&lat=2&lon=3", "lat"), ("/weather?lat=1e1&lon=3", "lat"),
        ("/weather?lat=%2B1&lon=3", "lat"), ("/weather?lat=+1&lon=3", "lat"), ("/weather?lat=0x1&lon=3", "lat"),
        ("/weather?lat=&lon=3", "lat"), ("/overview?lat=1&lon=1&lon=2", "lon"),
    ])
    func badCoordinatesAre400NamingTheParameter(_ example: (String, String)) async throws {
        try await withLarder { h in
            let response = try await h.get(example.0)
            #expect(response.status == 400)
            #expect(response.header("content-type") == "application/problem+json")
            #expect(response.header("cache-control") == "no-store")
            let problem = try json(response)
            #expect(problem["title"] as? String == "Bad Request")
            let errors = try #require(problem["errors"] as? [[String: String]])
            #expect(errors.map { $0["name"] } == [example.1])
            #expect(errors.first?["reason"]?.hasPrefix(example.1 + " ") == true)
            #expect(h.upstream.count("/v1/forecast") == 0)
        }
    }

    @Test func every400ListsEveryBadParameter() async throws {
        try await withLarder { h in
            let response = try await h.get("/overview?lat=abc&lon=999")
            #expect(response.status == 400)
            let problem = try json(response)
            let errors = try #require(problem["errors"] as? [[String: String]])
            #expect(errors.map { $0["name"] } == ["lat", "lon"])
            #expect(problem["detail"] as? String == "lat must be a plain decimal number such as 52.52. lon must be between -180 and 180.")
        }
    }

    @Test func anUnreachableUpstreamIsExplainedWithoutItsHostPortOrLibraryMessage() async throws {
        let log = RecordedLog()
        let port = closedPort()
        try await withLarder(logger: log.logger(level: .warning), { $0.balanceURL = "http://127.0.0.1:\(port)/balance" }) { h in
            let response = try await h.get("/balance")
            #expect(response.status == 502)
            let detail = try #require(try json(response)["detail"] as? String)
            #expect(detail == "The balance upstream has no usable answer: the upstream could not be reached.")
            #expect(!response.text.contains(String(port)) && !response.text.contains("127.0.0.1"))
            // The operator gets what the library said.
            #expect(log.messages(at: .warning).contains { $0.hasPrefix("upstream balance request failed: cannot connect to upstream") })
        }
    }

    /// Open-Meteo refuses a bad request with 400 and a reason: the caller gets 502, the
    /// operator one warning line saying why (escaped by the log writer, capped).
    @Test func anUpstreamRefusalLogsItsReason() async throws {
        let log = RecordedLog()
        let upstream = try TestUpstream()
        upstream.update {
            $0.status = 400
            $0.body = #"{"error":true,"reason":"Cannot initialize WeatherVariable from invalid String value tempera\nture_2m"}"#
        }
        try await withLarder(upstream: upstream, logger: log.logger(level: .warning)) { h in
            let response = try await h.get("/weather?lat=52.52&lon=13.41")
            #expect(response.status == 502)
            #expect(!response.text.contains("WeatherVariable"))
            let lines = log.messages(at: .warning).filter { $0.hasPrefix("upstream weather request failed") }
            #expect(lines == ["upstream weather request failed: answered 400: Cannot initialize WeatherVariable from invalid String value tempera\nture_2m"])
        }
        await upstream.stop()
    }

    @Test func roundingSharesOneEntryAndOneUpstreamCall() async throws {
        try await withLarder { h in
            let first = try await h.get("/weather?lat=52.5201&lon=13.4149")
            let second = try await h.get("/weather?lat=52.52&lon=13.41")
            let third = try await h.get("/weather?lat=52.515&lon=13.405")  // half away from zero
            #expect(first.status == 200 && second.status == 200 && third.status == 200)
            #expect(h.upstream.count("/v1/forecast") == 1)
            #expect(second.header("cache-status")?.hasPrefix("larder; hit") == true)
            #expect(try json(first)["latitude"] as? Double == 52.52)
            #expect(try json(third)["longitude"] as? Double == 13.41)
        }
    }

    @Test func clientForcedRefreshesOfABuiltInRouteAreLimitedPerKey() async throws {
        try await withLarder { h in
            _ = try await h.get("/weather?lat=52.52&lon=13.41")
            let allowed = try await h.get("/weather?lat=52.52&lon=13.41", headers: ["Cache-Control: no-cache"])
            #expect(allowed.header("cache-status")?.hasPrefix("larder; fwd=request") == true)
            h.clock.advance(by: 1)  // so max-age=0 finds the refreshed answer older than 0 s
            let limited = try await h.get("/weather?lat=52.52&lon=13.41", headers: ["Cache-Control: max-age=0"])
            #expect(limited.status == 200)
            #expect(limited.header("cache-status")?.hasSuffix("; detail=refresh-limited") == true)
            #expect(h.upstream.count("/v1/forecast") == 2)
            // Another key has a limit of its own.
            _ = try await h.get("/weather?lat=10&lon=10")
            let other = try await h.get("/weather?lat=10&lon=10", headers: ["Pragma: no-cache"])
            #expect(other.header("cache-status")?.hasPrefix("larder; fwd=request") == true)
            #expect(h.upstream.count("/v1/forecast") == 4)
            h.clock.advance(by: 4)  // 5 s after the allowed refresh
            let again = try await h.get("/weather?lat=52.52&lon=13.41", headers: ["Cache-Control: no-cache"])
            #expect(again.header("cache-status")?.hasPrefix("larder; fwd=request") == true)
            #expect(h.upstream.count("/v1/forecast") == 5)
        }
    }

    @Test func aRefreshMinIntervalOfZeroForwardsEveryForcedRefresh() async throws {
        try await withLarder({ $0.refreshMinInterval = .zero }) { h in
            for _ in 0..<3 { _ = try await h.get("/weather?lat=52.52&lon=13.41", headers: ["Cache-Control: no-cache"]) }
            #expect(h.upstream.count("/v1/forecast") == 3)
        }
    }

    @Test func missThenHitWithAgeGrowing() async throws {
        try await withLarder { h in
            let miss = try await h.get("/weather?lat=1&lon=2")
            #expect(miss.header("cache-status") == "larder; fwd=miss; fwd-status=200; stored")
            #expect(["0", "1"].contains(miss.header("age")))  // Date's one-second resolution, as above
            h.clock.advance(by: 10.9)
            let hit = try await h.get("/weather?lat=1&lon=2")
            let age = try #require(hit.header("age").flatMap(Int.init))
            #expect(age >= 9 && age <= 11)
            #expect(hit.header("cache-status") == "larder; hit; ttl=\(60 - age); detail=memory")
            #expect(hit.header("etag") == miss.header("etag"))
            #expect(h.upstream.count("/v1/forecast") == 1)
        }
    }

    @Test func fiftyConcurrentRequestsForOneColdKeyMakeOneUpstreamRequest() async throws {
        let upstream = try TestUpstream()
        upstream.update { $0.delay = .milliseconds(300) }
        try await withLarder(upstream: upstream) { h in
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<50 { group.addTask { try await h.get("/weather?lat=10&lon=10").status } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.count == 50 && statuses.allSatisfy { $0 == 200 })
            #expect(h.upstream.count("/v1/forecast") == 1)
        }
        await upstream.stop()
    }

    @Test func aRestartKeepsTheDiskTier() async throws {
        let upstream = try TestUpstream()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("larder-restart-\(UUID().uuidString)").path
        try await withLarder(upstream: upstream, cacheDirectory: directory) { h in
            let r1 = try await h.get("/weather?lat=3&lon=4")
            #expect(r1.status == 200)
        }
        try await withLarder(upstream: upstream, cacheDirectory: directory) { h in
            let response = try await h.get("/weather?lat=3&lon=4")
            #expect(response.status == 200)
            #expect(response.header("cache-status")?.hasSuffix("detail=disk") == true)
        }
        #expect(upstream.count("/v1/forecast") == 1)
        await upstream.stop()
    }

    @Test func upstreamDownServesStaleWithinStaleIfError() async throws {
        try await withLarder { h in
            let r2 = try await h.get("/weather?lat=5&lon=5")
            #expect(r2.status == 200)
            h.clock.advance(by: 200)  // well past max-age 60 and the 30 s stale-while-revalidate window
            h.upstream.update { $0.status = 503; $0.body = "{\"error\":true}" }
            let response = try await h.get("/weather?lat=5&lon=5")
            #expect(response.status == 200)
            #expect(response.header("cache-status") == "larder; fwd=stale; fwd-status=503; detail=stale-if-error")
            let ready = try await h.get("/readyz")
            #expect(ready.status == 200)
            #expect(try json(ready)["status"] as? String == "warn")
        }
    }

    @Test func upstreamDownWithoutStaleIfErrorIs502() async throws {
        try await withLarder({ $0.staleIfError = .zero }) { h in
            let r3 = try await h.get("/weather?lat=5&lon=5")
            #expect(r3.status == 200)
            h.clock.advance(by: 200)
            h.upstream.update { $0.status = 500 }
            let response = try await h.get("/weather?lat=5&lon=5")
            #expect(response.status == 502)
            #expect(response.header("content-type") == "application/problem+json")
            #expect(response.header("cache-status") == "larder; fwd=stale; fwd-status=500")
        }
    }

    @Test func upstreamTimeoutIs504() async throws {
        let upstream = try TestUpstream()
        upstream.update { $0.delay = .seconds(3) }
        try await withLarder(upstream: upstream, { $0.upstreamTimeout = .milliseconds(300) }) { h in
            let response = try await h.get("/weather?lat=6&lon=6")
            #expect(response.status == 504)
            #expect(try json(response)["detail"] as? String == "The weather upstream has no usable answer: the upstream did not answer in time.")
        }
        await upstream.stop()
    }

    @Test func garbageBodyIs502AndNotStored() async throws {
        try await withLarder { h in
            h.upstream.update { $0.body = "<html>not json</html>" }
            let r4 = try await h.get("/weather?lat=7&lon=7")
            #expect(r4.status == 502)
            let r5 = try await h.get("/weather?lat=7&lon=7")
            #expect(r5.status == 502)
            #expect(h.upstream.count("/v1/forecast") == 2)
            h.upstream.update { $0.body = "{\"balance\":\"lots\"}" }
            let r6 = try await h.get("/balance")
            #expect(r6.status == 502)
        }
    }

    @Test func ifNoneMatchGets304WithValidatorsAndNoBody() async throws {
        try await withLarder { h in
            let first = try await h.get("/weather?lat=8&lon=8")
            let etag = try #require(first.header("etag"))
            let response = try await h.get("/weather?lat=8&lon=8", headers: ["If-None-Match: W/\(etag), \"other\""])
            #expect(response.status == 304)
            #expect(response.header("etag") == etag)
            #expect(response.header("cache-control") != nil && response.header("age") != nil)
            #expect(response.header("cache-status") != nil && response.header("date") != nil)
            #expect(response.header("content-type") == nil && response.header("content-length") == nil)
            let r7 = try await h.get("/weather?lat=8&lon=8", headers: ["If-None-Match: *"])
            #expect(r7.status == 304)
            let r8 = try await h.get("/weather?lat=8&lon=8", headers: ["If-None-Match: \"nope\""])
            #expect(r8.status == 200)
        }
    }

    @Test func noCacheForcesARevalidation() async throws {
        try await withLarder { h in
            _ = try await h.get("/weather?lat=9&lon=9")
            let response = try await h.get("/weather?lat=9&lon=9", headers: ["Cache-Control: no-cache"])
            #expect(response.status == 200)
            #expect(h.upstream.count("/v1/forecast") == 2)
            #expect(h.upstream.requests.last?.headers["if-none-match"] == "\"upstream-v1\"")
            #expect(response.header("cache-status") == "larder; fwd=request; fwd-status=304; stored")
        }
    }

    @Test func onlyIfCachedOnAColdKeyIs504() async throws {
        try await withLarder { h in
            let response = try await h.get("/weather?lat=11&lon=11", headers: ["Cache-Control: only-if-cached"])
            #expect(response.status == 504)
            #expect(h.upstream.count("/v1/forecast") == 0)
        }
    }

    @Test func balanceWithoutAnUpstreamIs503() async throws {
        try await withLarder({ $0.balanceURL = nil }) { h in
            let balance = try await h.get("/balance")
            #expect(balance.status == 503)
            #expect(try json(balance)["detail"] as? String == "No balance upstream is configured (set --balance-url or LARDER_BALANCE_URL).")
            let r9 = try await h.get("/overview?lat=1&lon=1")
            #expect(r9.status == 503)
        }
    }

    @Test func overviewNamesTheFailingPart() async throws {
        try await withLarder({ $0.staleIfError = .zero }) { h in
            h.upstream.update { $0.body = "{}" }
            let response = try await h.get("/overview?lat=1&lon=1")
            #expect(response.status == 502)
            #expect((try json(response)["detail"] as? String)?.hasPrefix("The weather upstream") == true)
        }
    }

    @Test func headAnswersWithoutABody() async throws {
        try await withLarder { h in
            let response = try await h.get("/weather?lat=12&lon=12", method: "HEAD")
            #expect(response.status == 200)
            #expect(response.body.isEmpty)
            #expect(Int(response.header("content-length") ?? "") ?? 0 > 0)
        }
    }

    @Test func otherMethodsAre405() async throws {
        try await withLarder { h in
            let response = try await h.get("/weather?lat=1&lon=1", method: "DELETE")
            #expect(response.status == 405)
            #expect(response.header("allow") == "GET, HEAD")
        }
    }
}
