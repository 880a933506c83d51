import Foundation
import HTTPCore
import HTTPServer
import InMemoryTracing
import Testing
import TestSupport
import Tracing
@testable import Larder
@testable import Settings

/// A client's hostile `traceparent` and `tracestate`, and requests made to mint span names,
/// against a real Larder (real sockets) with the in-memory tracer: what is not valid W3C
/// Trace Context starts a new trace and reaches neither the origin nor the spans, and span
/// names stay the method and the configured route.
@Suite(.timeLimit(.minutes(1))) struct TraceContextAbuseTests {
    static let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

    static func pair() throws -> (TestOrigin, ServiceHarness, TestTracer) {
        let origin = try TestOrigin { _ in HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=60")]), body: "{}") }
        let tracer = TestTracer()
        let h = try ServiceHarness.start(tracer: tracer) { $0.routes = [RouteMount("/api=\(origin.url)")!] }
        return (origin, h, tracer)
    }

    /// Each malformed traceparent: answered 200, a new root trace, and the origin gets one
    /// traceparent, Larder's own client span's, and no tracestate.
    @Test func aMalformedTraceparentStartsANewTrace() async throws {
        let (origin, h, tracer) = try Self.pair()
        defer { tracer.clear() }
        let id = "0af7651916cd43dd8448eb211c80319c", span = "b7ad6b7169203331"
        let bad: [String: [String]] = [
            "version ff": ["traceparent: ff-\(id)-\(span)-01"],
            "zero trace id": ["traceparent: 00-\(String(repeating: "0", count: 32))-\(span)-01"],
            "zero span id": ["traceparent: 00-\(id)-0000000000000000-01"],
            "uppercase": ["traceparent: 00-\(id.uppercased())-\(span.uppercased())-01"],
            "short trace id": ["traceparent: 00-\(id.dropLast())-\(span)-01"],
            "long span id": ["traceparent: 00-\(id)-\(span)0-01"],
            "extra field on 00": ["traceparent: \(Self.parent)-what"],
            "non-hex": ["traceparent: 00-\(id.dropLast())g-\(span)-01"],
            "obs-text": ["traceparent: 00-\(id.dropLast(2))\u{E9}-\(span)-01"],
            "comma list": ["traceparent: \(Self.parent),00-\(String(id.reversed()))-\(span)-01"],
            "two fields": ["traceparent: \(Self.parent)", "traceparent: 00-\(String(id.reversed()))-\(span)-01"],
        ]
        for (index, (name, fields)) in bad.sorted(by: { $0.key < $1.key }).enumerated() {
            tracer.recorder.clearFinishedSpans()
            let answer = try await h.get("/api/bad\(index)", headers: fields + ["tracestate: congo=t61rcWkgMzE"])
            #expect(answer.status == 200, "\(name)")
            let spans = tracer.finishedSpans
            let server = try #require(spans.first { $0.kind == .server }, "\(name)")
            #expect(server.parentSpanID == nil && server.traceID != id && server.traceID != String(id.reversed()), "\(name)")
            let client = try #require(spans.first { $0.kind == .client && $0.parentSpanID == server.spanID }, "\(name)")
            let received = try #require(origin.requests.last)
            #expect(received.headers.values("traceparent") == ["00-\(server.traceID)-\(client.spanID)-01"], "\(name)")
            #expect(received.headers.values("tracestate").isEmpty, "\(name): a tracestate belongs to the traceparent it came with")
        }
        await h.stop()
        await h.upstream.stop()
        await origin.stop()
    }

    /// A valid traceparent is continued, but a tracestate past W3C's bounds (more than 32
    /// members, non-ASCII, past 512 bytes) is dropped; one within them goes on; one too large
    /// for a header block is a 431 problem, not a crash.
    @Test func anAbusiveTracestateIsDropped() async throws {
        let (origin, h, tracer) = try Self.pair()
        defer { tracer.clear() }
        let members33 = (0..<33).map { "v\($0)=x" }.joined(separator: ",")
        let cases: [(String, String, [String])] = [
            ("33 members", members33, []),
            ("obs-text", "congo=t61r\u{E9}", []),
            ("600 bytes", "congo=" + String(repeating: "a", count: 594), []),
            ("two fields, one list", "congo=t61rcWkgMzE\r\ntracestate: rojo=00f067aa0ba902b7", ["congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"]),
        ]
        for (index, (name, state, expected)) in cases.enumerated() {
            tracer.recorder.clearFinishedSpans()
            let answer = try await h.get("/api/state\(index)", headers: ["traceparent: \(Self.parent)", "tracestate: \(state)"])
            #expect(answer.status == 200, "\(name)")
            let server = try #require(tracer.finishedSpans.first { $0.kind == .server })
            #expect(server.parentSpanID == "b7ad6b7169203331", "\(name): the traceparent itself is valid")
            #expect(origin.requests.last?.headers.values("tracestate") == expected, "\(name)")
        }
        let huge = try await h.get("/api/huge", headers: ["traceparent: \(Self.parent)", "tracestate: k=" + String(repeating: "a", count: 64 * 1024)])
        #expect(huge.status == 431 && huge.header("content-type") == "application/problem+json")
        #expect(try await h.get("/api/after").status == 200, "still serving")
        await h.stop()
        await h.upstream.stop()
        await origin.stop()
    }

    /// A bare CR inside a traceparent value cannot smuggle a field to the origin.
    @Test func aBareCRInTraceparentSmugglesNothing() async throws {
        let (origin, h, tracer) = try Self.pair()
        defer { tracer.clear() }
        let answer = try await h.get("/api/cr", headers: ["traceparent: \(Self.parent)\rX-Smuggled: 1"])
        #expect(!origin.requests.contains { $0.headers["x-smuggled"] != nil })
        #expect(answer.status == 400 || answer.status == 200, "\(answer.status)")
        await h.stop()
        await h.upstream.stop()
        await origin.stop()
    }

    /// Span names are the method and the configured route: a long path, a path under no
    /// route and a made-up method mint no new names.
    @Test func spanNamesStayBounded() async throws {
        let (origin, h, tracer) = try Self.pair()
        defer { tracer.clear() }
        let long = "/api/" + String(repeating: "a", count: 6000) + "?q=" + String(repeating: "b", count: 1000)
        #expect(try await h.get(long).status == 200)
        _ = try await h.get("/nowhere/" + String(repeating: "c", count: 6000))
        _ = try await h.get("/api/x", method: "FROBNICATE" + String(repeating: "Z", count: 200))
        let servers = tracer.finishedSpans.filter { $0.kind == .server }
        #expect(servers.map(\.operationName) == ["GET /api", "GET", "HTTP /api"])
        #expect(servers.allSatisfy { $0.operationName.utf8.count <= 16 })
        #expect(servers.map { TracingTests.string($0, "http.route") } == ["/api", nil, "/api"])
        #expect(TracingTests.string(servers[2], "http.request.method") == "_OTHER")
        #expect(servers.allSatisfy { (TracingTests.string($0, "url.path") ?? "").utf8.count <= 8 * 1024 })
        #expect(TracingTests.string(servers[0], "url.path")?.contains("?") == false, "no query in url.path")
        #expect(tracer.finishedSpans.filter { $0.kind == .client }.allSatisfy { $0.operationName.utf8.count <= 8 })
        await h.stop()
        await h.upstream.stop()
        await origin.stop()
    }

    /// Untraced, Larder forwards the client's fields as they came, valid or not.
    @Test func untracedForwardsTheClientsFieldsUnchanged() async throws {
        let origin = try TestOrigin { _ in HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=60")]), body: "{}") }
        let h = try ServiceHarness.start(tracer: nil) { $0.routes = [RouteMount("/api=\(origin.url)")!] }
        let odd = "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        #expect(try await h.get("/api/a", headers: ["traceparent: \(odd)", "tracestate: congo=t61rcWkgMzE"]).status == 200)
        #expect(origin.requests.last?.headers.values("traceparent") == [odd])
        #expect(origin.requests.last?.headers.values("tracestate") == ["congo=t61rcWkgMzE"])
        await h.stop()
        await h.upstream.stop()
        await origin.stop()
    }
}
