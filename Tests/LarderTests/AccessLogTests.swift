import Caching
import Foundation
import HTTPServer
import Logging
import Testing
import TestSupport
@testable import Larder

/// Access lines say how bad an answer was: `warning` for a stored answer standing in for a
/// failed upstream, `error` for a 5xx, so `--log-level warning` shows an outage.
@Suite(.timeLimit(.minutes(1))) struct AccessLogLevelTests {
    @Test func staleStandInsAreWarningsAnd5xxAreErrors() async throws {
        let log = RecordedLog()
        try await withLarder(logger: log.logger(level: .warning)) { h in
            let first = try await h.get("/weather?lat=1&lon=1")
            #expect(first.status == 200)
            // (The listening line is printed at any level; no access line is.)
            #expect(!log.messages(at: .info).contains { $0.hasPrefix("GET ") } && log.messages(at: .warning).isEmpty)
            h.clock.advance(by: 100)
            h.upstream.update { $0.status = 500 }
            #expect(try await h.get("/weather?lat=1&lon=1").status == 200)
            #expect(try await h.get("/weather?lat=2&lon=2").status == 502)
            #expect(log.messages(at: .warning).contains("GET /weather?lat=1&lon=1 200"))
            #expect(log.messages(at: .error) == ["GET /weather?lat=2&lon=2 502"])
        }
    }

    @Test func logfmtQuotesWhatWouldOtherwiseBeAmbiguousAndJSONKeepsNumbers() {
        func written(json: Bool, _ value: LogLine.Value) -> String {
            var line = LogLine(json: json, level: .info, label: "t", message: "m")
            line.field("k", value)
            let text = String(decoding: line.finish(), as: UTF8.self)
            return String(text.dropLast(json ? 2 : 1).split(separator: json ? ":" : "=", omittingEmptySubsequences: false).last.map(String.init) ?? "")
        }
        #expect(written(json: false, .text("/weather")) == "/weather")
        #expect(written(json: false, .text("a\"b")) == "\"a\\\"b\"")
        #expect(written(json: false, .text("tab\there")) == "\"tab\\there\"")
        #expect(written(json: false, .text("")) == "\"\"")
        #expect(written(json: false, .text("\u{1}")) == "\"\\u0001\"")
        #expect(written(json: true, .metadata(.stringConvertible(200))) == "200")
        #expect(written(json: true, .metadata(.stringConvertible(0.25))) == "0.25")
        #expect(written(json: true, .metadata(.string("200"))) == "\"200\"")
        #expect(written(json: true, .text("200")) == "\"200\"")
        // Thousandths read as Swift prints the Double of the same value.
        for count in [0, 1, 10, 100, 1000, 1234, 2000, 2500, 999_999, 1_000_001, -1500] {
            #expect(written(json: true, .thousandths(count)) == String(Double(count) / 1000))
        }
        var quoted = LogLine(json: false, level: .warning, label: "t", message: "larder; fwd=miss")
        let line = String(decoding: quoted.finish(), as: UTF8.self)
        #expect(line.hasPrefix("time=") && line.hasSuffix("Z level=warning msg=\"larder; fwd=miss\"\n"))
    }
}

extension AccessLogLevelTests {
    @Test func aForwardedAnswerSaysHowLongTheUpstreamTookAndAHitDoesNot() async throws {
        let clock = ManualClock(Date())
        let upstream = try TestUpstream()
        try await withLarder(upstream: upstream, clock: clock) { h in
            let miss = try await h.get("/weather?lat=3&lon=3")
            let timing = try #require(miss.header("server-timing"))
            #expect(timing.hasPrefix("upstream;dur="))
            #expect(AccessLog.upstreamMilliseconds(timing) != nil)
            let hit = try await h.get("/weather?lat=3&lon=3")
            #expect(hit.header("server-timing") == nil)
        }
        await upstream.stop()
        #expect(AccessLog.upstreamMilliseconds("cache;desc=x, upstream;dur=12.5") == 12.5)
        #expect(AccessLog.upstreamMilliseconds("upstream") == nil)
    }
}

extension AccessLogLevelTests {
    @Test func theCacheResultFollowsCacheStatus() {
        typealias Result = RequestSeries.CacheResult
        #expect(Result(CacheStatus(hit: true, ttl: 12, detail: .memory)) == .hit)
        #expect(Result(CacheStatus(hit: true, ttl: -3)) == .stale)
        #expect(Result(CacheStatus(forward: .stale, forwardStatus: 503, detail: .staleIfError)) == .standIn)
        #expect(Result(CacheStatus(forward: .stale, detail: .disconnected)) == .standIn)
        #expect(Result(CacheStatus(forward: .miss, forwardStatus: 200, stored: true)) == .miss)
        #expect(Result(CacheStatus(forward: .miss, detail: .backoff)) == .miss)
        #expect(Result.standIn.counted == .stale && Result.hit.counted == .hit)
        // What the access log reads: the note on the response, none when nothing noted it.
        #expect(HTTPResponse(status: 200).noting(CacheStatus(hit: true, ttl: 1)).annotation == Result.hit.rawValue)
        #expect(Result(rawValue: HTTPResponse(status: 404).annotation) == Result.none)
    }
}
