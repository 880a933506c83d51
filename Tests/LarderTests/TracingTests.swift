import Foundation
import HTTPCore
import HTTPServer
import InMemoryTracing
import RedisVocabulary
import Testing
import TestSupport
import Tracing
@testable import Larder
@testable import Settings

/// The spans of real requests to a real Larder (in process, real sockets) through
/// swift-distributed-tracing's in-memory tracer: the server span, its children (the upstream
/// exchange, a collapsed wait, aggregate parts), a stale-while-revalidate refresh in a trace
/// of its own, and the `traceparent` the origin received.
@Suite(.timeLimit(.minutes(1))) struct TracingTests {
    static let weather = "/weather?lat=52.52&lon=13.41"

    static func start(_ tracer: TestTracer, log: RecordedLog = RecordedLog(), upstream: TestUpstream? = nil,
                      _ configure: (inout ServeSettings) -> Void = { _ in }) throws -> ServiceHarness {
        try ServiceHarness.start(upstream: upstream, logger: log.logger(), tracer: tracer, configure)
    }

    static func server(_ spans: [FinishedInMemorySpan]) -> [FinishedInMemorySpan] { spans.filter { $0.kind == .server } }

    static func children(of parent: FinishedInMemorySpan, in spans: [FinishedInMemorySpan]) -> [FinishedInMemorySpan] {
        spans.filter { $0.parentSpanID == parent.spanID && $0.traceID == parent.traceID }
    }

    static func string(_ span: FinishedInMemorySpan, _ key: String) -> String? {
        if case .string(let value)? = span.attributes[key]?.toSpanAttribute() { return value }
        return nil
    }

    static func int(_ span: FinishedInMemorySpan, _ key: String) -> Int64? {
        switch span.attributes[key]?.toSpanAttribute() {
        case .int64(let value)?: value
        case .int32(let value)?: Int64(value)
        default: nil
        }
    }

    /// A miss: the server span by the HTTP conventions with the cache's outcome, the upstream
    /// exchange as its client child, whose context reached the origin; then a hit, one span.
    @Test func aMissAndAHit() async throws {
        let tracer = TestTracer()
        defer { tracer.clear() }
        let log = RecordedLog()
        let h = try Self.start(tracer, log: log)
        let miss = try await h.get(Self.weather)
        #expect(miss.status == 200)
        let spans = tracer.finishedSpans
        let server = try #require(Self.server(spans).first)
        #expect(server.operationName == "GET /weather")
        #expect(Self.string(server, "http.request.method") == "GET")
        #expect(Self.string(server, "url.path") == "/weather")
        #expect(Self.string(server, "http.route") == "/weather")
        #expect(Self.int(server, "http.response.status_code") == 200)
        #expect(Self.string(server, "server.address") == "larder" && Self.int(server, "server.port") == 80)
        #expect(Self.string(server, "client.address") == "127.0.0.1")
        #expect(Self.string(server, "network.protocol.version") == "1.1")
        #expect(Self.string(server, "larder.cache.outcome") == "miss")
        #expect(Self.string(server, "larder.cache.tier") == "upstream")
        #expect(Self.string(server, "larder.cache.status") == miss.header("cache-status"))
        #expect(server.parentSpanID == nil && server.status == nil)
        let client = try #require(Self.children(of: server, in: spans).first { $0.kind == .client })
        #expect(client.operationName == "GET")
        #expect(Self.int(client, "http.response.status_code") == 200)
        #expect(Self.string(client, "url.full") == h.upstream.weatherURL, "no query: a route's may hold its credential")
        let received = h.upstream.requests.last?.headers["traceparent"]
        #expect(received == "00-\(server.traceID)-\(client.spanID)-01")
        let line = try #require(log.all.last { $0.metadata["log"] == "access" })
        #expect(line.metadata["trace_id"] == server.traceID && line.metadata["span_id"] == server.spanID)

        tracer.recorder.clearFinishedSpans()
        let hit = try await h.get(Self.weather)
        #expect(hit.header("cache-status")?.hasPrefix("larder; hit") == true)
        let hitSpans = tracer.finishedSpans
        #expect(hitSpans.count == 1, "a memory hit has no child: \(hitSpans.map(\.operationName))")
        #expect(Self.string(hitSpans[0], "larder.cache.outcome") == "hit" && Self.string(hitSpans[0], "larder.cache.tier") == "memory")

        // Probes and scrapes are not traced; every other path is, an unknown one too.
        tracer.recorder.clearFinishedSpans()
        for path in ["/livez", "/readyz", "/healthz", "/metrics", "/nothing-here"] { _ = try await h.get(path) }
        #expect(tracer.finishedSpans.map { Self.string($0, "url.path") } == ["/nothing-here"])
        await h.stop()
        await h.upstream.stop()
    }

    /// A pass-through miss under the client's trace: the server span's parent is the
    /// client's span, and the origin gets Larder's client span in place of the client's.
    /// Untraced, the client's fields go on as they came.
    @Test func aPassThroughMissContinuesTheClientsTrace() async throws {
        let origin = try TestOrigin { _ in HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=60")]), body: "{}") }
        let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        let fields = ["traceparent: \(parent)", "tracestate: congo=t61rcWkgMzE"]
        let tracer = TestTracer()
        defer { tracer.clear() }
        let h = try Self.start(tracer) { $0.routes = [RouteMount("/api=\(origin.url)")!] }
        #expect(try await h.get("/api/items", headers: fields).status == 200)
        let spans = tracer.finishedSpans
        let server = try #require(Self.server(spans).first)
        #expect(server.traceID == "0af7651916cd43dd8448eb211c80319c" && server.parentSpanID == "b7ad6b7169203331")
        #expect(server.operationName == "GET /api" && Self.string(server, "http.route") == "/api")
        let client = try #require(Self.children(of: server, in: spans).first { $0.kind == .client })
        #expect(origin.requests.last?.headers.values("traceparent") == ["00-0af7651916cd43dd8448eb211c80319c-\(client.spanID)-01"])
        #expect(origin.requests.last?.headers.values("tracestate") == ["congo=t61rcWkgMzE"])
        await h.stop()

        let untraced = try ServiceHarness.start(upstream: h.upstream) { $0.routes = [RouteMount("/api=\(origin.url)")!] }
        #expect(try await untraced.get("/api/other", headers: fields).status == 200)
        #expect(origin.requests.last?.headers.values("traceparent") == [parent])
        await untraced.stop()
        await h.upstream.stop()
        await origin.stop()
    }

    /// A 5xx answer sets the server span's status to error, and the upstream's span's too.
    @Test func aServerErrorIsASpanError() async throws {
        let tracer = TestTracer()
        defer { tracer.clear() }
        let h = try Self.start(tracer)
        h.upstream.update { $0.status = 500 }
        let failed = try await h.get(Self.weather)
        #expect(failed.status >= 500)
        let spans = tracer.finishedSpans
        let server = try #require(Self.server(spans).first)
        #expect(server.status?.code == .error)
        #expect(Self.children(of: server, in: spans).first { $0.kind == .client }?.status?.code == .error)
        await h.stop()
        await h.upstream.stop()
    }

    /// A body sent on its own after the head keeps the server span open until it has left:
    /// a client that reads slowly is part of the request's time.
    @Test func aLargeBodysSpanEndsWhenTheBodyHasLeft() async throws {
        let body = patternBytes(32 << 20)  // more than loopback's socket buffers hold
        let origin = try TestOrigin { _ in HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "no-store")]), body: body) }
        let tracer = TestTracer()
        defer { tracer.clear() }
        let h = try Self.start(tracer) { $0.routes = [RouteMount("/files=\(origin.url)")!] }
        let client = try TestClient(port: h.port)
        try client.send("GET /files/big HTTP/1.1\r\nHost: larder\r\n\r\n")
        _ = try await client.peek(atLeast: 1)
        try await Task.sleep(for: .milliseconds(300))
        #expect(Self.server(tracer.finishedSpans).isEmpty, "the body is still on its way")
        let answer = try await client.readResponse()
        #expect(answer.status == 200 && answer.body.count == body.count)
        #expect(await eventually { !Self.server(tracer.finishedSpans).isEmpty })
        await h.stop()
        await h.upstream.stop()
        await origin.stop()
    }

    /// An aggregate's part that misses the deadline is a child of the request's span that
    /// ends after it.
    @Test func anAggregatesLatePartOutlivesTheRequestSpan() async throws {
        let origin = try TestOrigin { _ in HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=300")]), body: "{}") }
        let tracer = TestTracer()
        defer { tracer.clear() }
        let h = try Self.start(tracer) { settings in
            settings.routes = [RouteMount("/rates=\(origin.url)")!]
            var weather = AggregateDeclaration.Part(name: "weather", target: PartTarget("/weather?lat={lat}&lon={lon}")!)
            weather.required = false
            var pair = AggregateDeclaration(path: "/pair", parts: [weather, .init(name: "rates", target: PartTarget("/rates/latest")!)])
            pair.deadline = .milliseconds(300)
            settings.aggregates = [pair]
        }
        // The rates part is a memory hit in the aggregate; only the weather part waits.
        #expect(try await h.get("/rates/latest").status == 200)
        h.upstream.update { $0.delay = .seconds(1) }
        tracer.recorder.clearFinishedSpans()
        let answer = try await h.get("/pair?lat=52.52&lon=13.41")
        #expect(answer.status == 200)
        #expect(await eventually { tracer.finishedSpans.contains { $0.operationName == "part weather" } })
        let spans = tracer.finishedSpans
        let server = try #require(Self.server(spans).first)
        #expect(server.operationName == "GET /pair")
        #expect(Self.string(server, "larder.aggregate.parts") == answer.header("larder-parts"))
        let part = try #require(spans.first { $0.operationName == "part weather" })
        #expect(part.parentSpanID == server.spanID && part.traceID == server.traceID)
        #expect(part.endInstant.nanosecondsSinceEpoch > server.endInstant.nanosecondsSinceEpoch, "late: it ended after the answer")
        #expect(!spans.contains { $0.operationName == "part rates" }, "a memory hit is no span")
        await h.stop()
        await h.upstream.stop()
        await origin.stop()
    }

    /// A request that joins another's fetch has a span for the wait.
    @Test func aCollapsedRequestWaitsInASpan() async throws {
        let tracer = TestTracer()
        defer { tracer.clear() }
        let upstream = try TestUpstream()
        upstream.update { $0.delay = .milliseconds(500) }
        let h = try Self.start(tracer, upstream: upstream)
        async let first = h.get(Self.weather)
        async let second = h.get(Self.weather)
        let answers = try await [first, second]
        #expect(upstream.count("/v1/forecast") == 1)
        let collapsed = answers.filter { $0.header("cache-status")?.contains("collapsed") == true }
        #expect(collapsed.count == 1)
        let spans = tracer.finishedSpans
        let wait = try #require(spans.first { $0.operationName == "collapsed wait" })
        let waiter = try #require(Self.server(spans).first { $0.spanID == wait.parentSpanID })
        #expect(Self.children(of: waiter, in: spans).allSatisfy { $0.kind != .client }, "the waiter fetched nothing")
        await h.stop()
        await upstream.stop()
    }

    /// A stale-while-revalidate refresh is a trace of its own, linked to the request that
    /// started it, with the upstream exchange under it.
    @Test func aRefreshIsItsOwnLinkedTrace() async throws {
        let tracer = TestTracer()
        defer { tracer.clear() }
        let h = try Self.start(tracer)
        #expect(try await h.get(Self.weather).status == 200)
        h.clock.advance(by: 70)  // past max-age 60, inside the 30 s stale-while-revalidate
        tracer.recorder.clearFinishedSpans()
        let stale = try await h.get(Self.weather)
        #expect(stale.header("cache-status")?.hasPrefix("larder; hit") == true, "\(stale.header("cache-status") ?? "")")
        #expect(await eventually { tracer.finishedSpans.contains { $0.operationName == "revalidate" } })
        let spans = tracer.finishedSpans
        let request = try #require(Self.server(spans).first)
        let refresh = try #require(spans.first { $0.operationName == "revalidate" })
        #expect(refresh.parentSpanID == nil && refresh.traceID != request.traceID)
        #expect(refresh.links.map { $0.context.inMemorySpanContext?.spanID } == [request.spanID])
        #expect(Self.children(of: refresh, in: spans).contains { $0.kind == .client && $0.operationName == "GET" })
        #expect(Self.children(of: request, in: spans).isEmpty, "the request waited for nothing")
        await h.stop()
        await h.upstream.stop()
    }

    /// With the shared tier, each Redis call of a miss is a client span under the request's.
    @Test func aMissAsksRedisInClientSpans() async throws {
        let redis = try await RedisServer()
        defer { redis.stop() }
        let tracer = TestTracer()
        defer { tracer.clear() }
        let h = try Self.start(tracer) { settings in
            settings.redisURL = RedisURL(redis.url)
            settings.redisTimeout = .seconds(1)
        }
        #expect(await eventually { (try? await h.get("/readyz").text.contains("working without the shared tier")) == false })
        tracer.recorder.clearFinishedSpans()
        #expect(try await h.get(Self.weather).status == 200)
        let spans = tracer.finishedSpans
        let server = try #require(Self.server(spans).first { $0.operationName == "GET /weather" })
        let calls = Self.children(of: server, in: spans).filter { Self.string($0, "db.system.name") == "redis" }
        #expect(calls.contains { $0.operationName == "GETRANGE" && $0.kind == .client }, "\(calls.map(\.operationName))")
        #expect(calls.allSatisfy { Self.string($0, "db.operation.name") == $0.operationName && $0.status == nil })
        await h.stop()
        await h.upstream.stop()
    }
}
