import Caching
import Foundation
import HTTPCore
import CacheVocabulary
import HTTPServer
import Logging
import Testing
import TestSupport
@testable import Larder
@testable import Observability
@testable import AccessLogging
@testable import Settings
@testable import Routes

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

    /// What the server refuses before any route hears of it (a body over the limit, a
    /// framing it cannot read) is counted under `other` and written as an access line with
    /// its detail and client, as nginx logs its 400s and 413s: an operator sees them.
    @Test func answersTheServerGivesOnItsOwnAreCountedAndLogged() async throws {
        let log = RecordedLog()
        try await withLarder(logger: log.logger(level: .info)) { h in
            let tooLarge = try TestClient(port: h.port)
            try tooLarge.send("PUT /weather HTTP/1.1\r\nHost: l\r\nContent-Length: \(2 << 20)\r\n\r\n")
            #expect(try await tooLarge.readResponse().status == 413)
            let malformed = try TestClient(port: h.port)
            try malformed.send("GET /weather HTTP/1.1\r\nHost: l\r\nContent-Length: x\r\n\r\n")
            #expect(try await malformed.readResponse().status == 400)
            let refusals = log.all.filter { $0.message.hasPrefix("refused ") }
            #expect(refusals.map(\.message).sorted() == ["refused 400", "refused 413"], "\(refusals.map(\.message))")
            #expect(refusals.allSatisfy { $0.level == .info && $0.metadata["client"] == "127.0.0.1" && $0.metadata["route"] == "other" })
            #expect(refusals.contains { $0.metadata["detail"]?.contains("larger than the server accepts") == true })
            let metrics = try await h.get("/metrics").text
            #expect(metricValue("larder_http_requests_total{route=\"other\",status=\"413\"}", in: metrics) == 1)
            #expect(metricValue("larder_http_requests_total{route=\"other\",status=\"400\"}", in: metrics) == 1)
        }
    }

    @Test func logfmtQuotesWhatWouldOtherwiseBeAmbiguousAndJSONKeepsNumbers() {
        func written(json: Bool, _ value: Logger.MetadataValue) -> String {
            var line = LogLine(json: json, level: .info, label: "t", message: "m")
            line.field("k", value)
            let text = String(decoding: line.finish(), as: UTF8.self)
            return String(text.dropLast(json ? 2 : 1).split(separator: json ? ":" : "=", omittingEmptySubsequences: false).last.map(String.init) ?? "")
        }
        #expect(written(json: false, .string("/weather")) == "/weather")
        #expect(written(json: false, .string("a\"b")) == "\"a\\\"b\"")
        #expect(written(json: false, .string("tab\there")) == "\"tab\\there\"")
        #expect(written(json: false, .string("")) == "\"\"")
        #expect(written(json: false, .string("\u{1}")) == "\"\\u0001\"")
        #expect(written(json: true, .stringConvertible(200)) == "200")
        #expect(written(json: true, .stringConvertible(0.25)) == "0.25")
        #expect(written(json: true, .string("200")) == "\"200\"")
        // Whole thousandths are written without `description`, and must read as it does.
        let thousandths = [0, 1, 5, 10, 23, 100, 250, 999, 1_000, 1_005, 1_050, 1_500, 12_500, 999_999_999_999_999]
            + (0..<2_000).map { _ in Int.random(in: 0..<1_000_000_000) }
        for whole in thousandths {
            let number = Double(whole) / 1000
            #expect(LogLine.thousandths(number) == whole)
            #expect(written(json: false, .stringConvertible(number)) == number.description)
            #expect(written(json: true, .stringConvertible(number)) == number.description)
        }
        for other in [0.0005, 1.0 / 3, -0.0, -1.5, 1e13, .infinity, .nan] {
            #expect(LogLine.thousandths(other) == nil, "\(other)")
        }
        #expect(written(json: false, .stringConvertible(-0.0)) == "-0.0" && written(json: true, .stringConvertible(1e13)) == (1e13).description)
        #expect(written(json: false, .stringConvertible(-42)) == "-42" && written(json: true, .stringConvertible(Int.min)) == "\(Int.min)")
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
    @Test func madeRequestIDsAreDistinctAndUsableGivenOnesAreKept() {
        let ids = RequestIDs()
        func text(_ id: RequestIDs.ID) -> String {
            var bytes: [UInt8] = []
            id.append(to: &bytes)
            return String(decoding: bytes, as: UTF8.self)
        }
        let made = (0..<20).map { _ in text(ids.id(for: nil)) }
        #expect(Set(made).count == 20)
        // One prefix per process, then the counter in hex.
        let prefix = made[0].split(separator: "-")[0]
        #expect(made.allSatisfy { $0.wholeMatch(of: #/[0-9a-f]{1,8}-[0-9a-f]{1,16}/#) != nil && $0.hasPrefix(prefix + "-") })
        #expect(made[15].hasSuffix("-10"))
        for (number, digits) in [(UInt64(0), "0"), (0x1F, "1f"), (0xABC0_0000_0000_0001, "abc0000000000001"), (.max, "ffffffffffffffff")] {
            #expect(text(.made(prefix: 0xab, number: number)) == "ab-" + digits)
        }
        #expect(text(.made(prefix: 0, number: 9)) == "0-9")
        #expect(text(.made(prefix: .max, number: 0x10)) == "ffffffff-10")
        #expect(text(ids.id(for: "given-1")) == "given-1")
        for unusable in ["", "two words", String(repeating: "x", count: 129), "caf\u{E9}"] {
            #expect(text(ids.id(for: unusable)).hasPrefix(prefix + "-"), "\(unusable)")
        }
    }

    @Test func theCacheResultFollowsCacheStatus() {
        typealias Result = CacheOutcome
        #expect(Result(CacheStatus(hit: true, ttl: 12, detail: .memory)) == .hit)
        #expect(Result(CacheStatus(hit: true, ttl: -3)) == .stale)
        #expect(Result(CacheStatus(forward: .stale, forwardStatus: 503, detail: .staleIfError)) == .standIn)
        #expect(Result(CacheStatus(forward: .stale, detail: .disconnected)) == .standIn)
        #expect(Result(CacheStatus(forward: .miss, forwardStatus: 200, stored: true)) == .miss)
        #expect(Result(CacheStatus(forward: .miss, detail: .backoff)) == .miss)
        #expect(Result.standIn.counted == .stale && Result.hit.counted == .hit)
        // What the access log reads: the note on the response, none when nothing noted it.
        var noted = HTTPResponse(status: 200)
        noted.note(CacheStatus(hit: true, ttl: 1))
        #expect(noted.cacheOutcome == .hit)
        #expect(HTTPResponse(status: 404).cacheOutcome == .none)
    }
}

/// The access line goes through swift-log like every other line: Larder's own output and a
/// handler that wraps it write the same line, field for field, in key order, with whatever
/// fields the handler carries of its own among the access fields.
extension AccessLogLevelTests {
    /// A handler that only passes events on to Larder's own output.
    struct Forwarding: LogHandler {
        var output: LogOutput
        var logLevel: Logger.Level { get { output.logLevel } set { output.logLevel = newValue } }
        var metadata: Logger.Metadata { get { output.metadata } set { output.metadata = newValue } }
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { output[metadataKey: key] }
            set { output[metadataKey: key] = newValue }
        }
        func log(event: LogEvent) { output.log(event: event) }
    }

    /// `/weather` answering as a memory hit: `?late` a 502, `?miss` with the upstream's time.
    static func weatherRouter() -> Router {
        var router = Router()
        router.get("/weather") { request in
            var response = HTTPResponse(status: request.query == "late" ? 502 : 200, body: "{\"t\":1}")
            response.note(CacheStatus(hit: true, ttl: 12, detail: .memory), age: 3)
            if request.query == "miss" { response.headers.add("Server-Timing", "upstream;dur=12.5") }
            return .now(response)
        }
        return router
    }

    @Test func aWrappingHandlerWritesTheSameAccessLineInKeyOrder() throws {
        let router = Self.weatherRouter()
        for format in [LogOutput.Format.text, .json] {
            let pipe = OutputPipe()
            let sink = LogSink(fd: pipe.write)
            var output = LogOutput(label: "larder", level: .info, format: format, sink: sink)
            // Fields of the handler's own that sort before, between and after the access fields.
            output.metadata = ["aaa": "first", "cache_zz": "two words", "trace": "t-1", "zzz": .stringConvertible(3)]
            let series = RequestSeries(routes: ["/weather"])
            let direct = AccessLog(logger: Logger(label: "larder") { _ in output }, series: series)
            let wrapped = AccessLog(logger: Logger(label: "larder") { _ in Forwarding(output: output) }, series: series)
            // The last is longer than a line's first buffer, with escapes past where it grows.
            let long = "/weather?q=" + String(repeating: "a\"b\\c", count: 400)
            let targets = ["/weather?miss", "/weather?hit", "/weather?late", "/nowhere?a=\"b\"", "/weather?%22q%5C", long]
            for target in targets {
                for log in [direct, wrapped] {
                    var request = HTTPRequest(method: .get, target: target, headers: [("X-Request-Id", "id-\(target.utf8.count)")])
                    request.clientAddress = "192.0.2.7"
                    guard case .now(let response) = log.wrap(router)(request) else { Issue.record("not answered now"); return }
                    #expect(response.headers["x-request-id"] == "id-\(target.utf8.count)")
                }
            }
            sink.flush()
            let lines = pipe.text { $0.split(separator: "\n").count == 2 * targets.count }.split(separator: "\n")
            try #require(lines.count == 2 * targets.count)
            // The time and the measured duration differ between any two lines; the rest may not.
            let varying = try Regex(format == .json ? #""(time|duration_ms)":("[^"]*"|[0-9.]+)"# : #"(time|duration_ms)=\S+"#)
            for pair in stride(from: 0, to: lines.count, by: 2) {
                let (ownLine, wrappedLine) = (lines[pair].replacing(varying, with: ""), lines[pair + 1].replacing(varying, with: ""))
                #expect(ownLine == wrappedLine)
                #expect(ownLine.contains("first") && ownLine.contains("two words") && ownLine.contains("192.0.2.7"))
                let keys = ["aaa", "bytes", "cache_status", "cache_zz", "client", "request_id", "route", "status", "trace", "zzz"]
                let places = keys.map { ownLine.range(of: format == .json ? "\"\($0)\":" : " \($0)=")?.lowerBound }
                #expect(places.allSatisfy { $0 != nil } && places.map { $0! } == places.map { $0! }.sorted(), "\(ownLine)")
            }
            #expect(lines[0].contains(format == .json ? "\"upstream_ms\":12.5" : " upstream_ms=12.5"))
            // A thread's lines share their fields from one line to the next: the miss's extra key stays with the miss.
            #expect(lines[2...].allSatisfy { !$0.contains("upstream_ms") })
            #expect(lines[2].contains(format == .json ? "\"cache_status\":\"larder; hit; ttl=12; detail=memory\"" : " cache_status=\"larder; hit; ttl=12; detail=memory\""))
            #expect(lines[4].contains("level=error") || lines[4].contains("\"level\":\"error\""))
        }
    }
}

extension AccessLogLevelTests {
    @Test func aPlainSwiftLogHandlerSeesEveryAccessLine() throws {
        let router = Self.weatherRouter()
        let recorded = RecordedLog()
        let log = AccessLog(logger: recorded.logger(level: .info), series: RequestSeries(routes: ["/weather"]))
        for query in ["miss", "late"] {
            var request = HTTPRequest(method: .get, target: "/weather?\(query)", headers: [("X-Request-Id", "plain-\(query)")])
            request.clientAddress = "192.0.2.9"
            _ = log.wrap(router)(request)
        }
        let lines = recorded.all
        try #require(lines.count == 2)
        #expect(lines[0].level == .info && lines[0].message == "GET /weather?miss 200")
        #expect(lines[1].level == .error && lines[1].message == "GET /weather?late 502")
        let fields = lines[0].metadata
        #expect(fields["bytes"] == "7" && fields["status"] == "200" && fields["route"] == "/weather")
        #expect(fields["client"] == "192.0.2.9" && fields["request_id"] == "plain-miss")
        #expect(fields["cache_status"] == "larder; hit; ttl=12; detail=memory")
        #expect(fields["upstream_ms"] == "12.5")
        #expect(fields["duration_ms"].flatMap(Double.init) != nil)
        // The handler's level decides, read at each line.
        let quiet = AccessLog(logger: recorded.logger(level: .warning), series: RequestSeries(routes: ["/weather"]))
        _ = quiet.wrap(router)(HTTPRequest(method: .get, target: "/weather?miss"))
        _ = quiet.wrap(router)(HTTPRequest(method: .get, target: "/weather?late"))
        #expect(recorded.all.count == 3 && recorded.all.last?.level == .error)
    }
}

/// A thread reuses its access fields from one line to the next, so a handler that keeps each
/// event's fields, as one that ships its lines later would, must still see each line as it was.
extension AccessLogLevelTests {
    @Test func aHandlerThatKeepsEachLinesFieldsSeesThemUnchangedByLaterLines() throws {
        let recorded = RecordedLog()
        let log = AccessLog(logger: recorded.logger(level: .info), series: RequestSeries(routes: ["/weather"]))
        let queries = ["hit", "miss", "late", "hit"]
        for (n, query) in queries.enumerated() {
            let request = HTTPRequest(method: .get, target: "/weather?\(query)", headers: [("X-Request-Id", "keep-\(n)")])
            _ = log.wrap(Self.weatherRouter())(request)
        }
        let fields = recorded.all.map(\.given)
        try #require(fields.count == queries.count)
        #expect(fields.map { $0["request_id"]?.description } == ["keep-0", "keep-1", "keep-2", "keep-3"])
        #expect(fields.map { $0["status"]?.description } == ["200", "200", "502", "200"])
        #expect(fields.map { $0["upstream_ms"]?.description } == [nil, "12.5", nil, nil])
    }
}

/// A thread keeps the sorted order of the last few sets of keys it logged, so each line must
/// still be in key order when its keys, or their order in the dictionary, differ from the
/// line before: more sets than are kept, each logged twice in turn.
extension AccessLogLevelTests {
    @Test func linesWithOtherKeysOrTheSameKeysInOtherBucketsAreEachInKeyOrder() throws {
        let pipe = OutputPipe()
        let sink = LogSink(fd: pipe.write)
        var output = LogOutput(label: "t", level: .info, format: .text, sink: sink)
        output.metadata = ["m": "own"]
        let logger = Logger(label: "t") { _ in output }
        let names = ["route", "bytes", "zeta", "client", "alpha", "status", "kappa", "n"]
        var sets: [Logger.Metadata] = []
        for count in 2...names.count {
            // Another capacity puts the same keys in other buckets, so the dictionary lists them in another order.
            for capacity in [0, 64] {
                var fields = Logger.Metadata(minimumCapacity: capacity)
                for name in names.prefix(count) { fields[name] = .string(name) }
                sets.append(fields)
            }
        }
        for _ in 0..<2 {
            for fields in sets { logger.info("line", metadata: fields) }
        }
        sink.flush()
        let lines = pipe.text { $0.split(separator: "\n").count == 2 * sets.count }.split(separator: "\n")
        try #require(lines.count == 2 * sets.count)
        for (line, fields) in zip(lines, sets + sets) {
            let pairs = line.split(separator: " ").dropFirst(3).map { $0.split(separator: "=").map(String.init) }
            #expect(pairs.map { $0[0] } == (Array(fields.keys) + ["m"]).sorted(), "\(line)")
            // Each value is its key's (the handler's own aside).
            #expect(pairs.allSatisfy { $0 == [$0[0], $0[0] == "m" ? "own" : $0[0]] }, "\(line)")
        }
    }
}
