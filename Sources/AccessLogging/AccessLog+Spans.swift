import HTTPCore
import CacheVocabulary
public import HTTPServer
import Logging
import RequestTracing
public import Tracing

/// The server span of each request, beside its access line: named and attributed by
/// OpenTelemetry's HTTP semantic conventions, plus how the cache answered
/// (`larder.cache.status`, `.outcome`, `.tier`). Made only when Larder is given a tracer: with
/// none, `wrap(_:tracer:)` is `wrap(_:)` itself, and a request never looks for one.
extension AccessLog {
    /// The router's answers, logged, counted and, with a tracer, traced: the client's
    /// `traceparent` is the span's parent, and the span is the task's context while the
    /// answer is made, so the spans of its tiers, upstream call and parts are its children.
    /// Requests for the `untraced` paths (probes, scrapes: a trace each few seconds that says
    /// nothing) are logged and counted only.
    public func wrap(_ router: Router, tracer: (any Tracer)?, untraced: [String] = []) -> HTTPHandler {
        let plain = wrap(router)
        guard let tracer else { return plain }
        return { request in
            if untraced.contains(where: { request.path == $0 }) { return plain(request) }
            let start = MonotonicClock.nanoseconds()
            let id = requestIDs.id(for: request.headers["x-request-id"])
            let span = tracer.startSpan(SpanMethod.name(request.method.description), context: Trace.root(tracer, extractedFrom: request.headers),
                                        ofKind: .server)
            // A span the sampler dropped records nothing: its attributes and ids are not made.
            let recording = span.isRecording
            if recording { Self.describe(request, in: span) }
            let trace = Trace(tracer: tracer, context: span.context)
            let sampledIDs: @Sendable () -> TraceIDs? = { TraceIDs.sampled(in: trace) }
            let ids = recording ? sampledIDs : nil
            var matched: Int?
            let handled = ServiceContext.$current.withValue(trace.context) { router.handle(request, matchedPath: &matched) }
            switch handled {
            case .now(var response):
                let route = record(request, &response, route: matched, id: id, start, trace: ids)
                finish(span, recording: recording, request, &response, route: route)
                return .now(response)
            case .later(let work):
                return .later { [matched] in
                    var response = await ServiceContext.$current.withValue(trace.context) { await work() }
                    let route = record(request, &response, route: matched, id: id, start, trace: ids)
                    finish(span, recording: recording, request, &response, route: route)
                    return response
                }
            }
        }
    }

    /// What the span knows of the request before it is answered.
    private static func describe(_ request: HTTPRequest, in span: any Span) {
        var attributes = span.attributes
        attributes["http.request.method"] = SpanAttribute.string(SpanMethod.attribute(request.method.description))
        attributes["url.path"] = SpanAttribute.string(String(request.path))
        attributes["network.protocol.version"] = SpanAttribute.string(request.version == .http10 ? "1.0" : "1.1")
        if !request.clientAddress.isEmpty { attributes["client.address"] = SpanAttribute.string(request.clientAddress) }
        if let host = request.headers["host"], let (address, port) = Self.server(host) {
            attributes["server.address"] = SpanAttribute.string(address)
            attributes["server.port"] = SpanAttribute.int64(Int64(port))
        }
        span.attributes = attributes
    }

    /// The answer's part: route, status, how the cache answered; a 5xx is an error. The span
    /// ends when the answer has left: with its head, or, for a body sent on its own after it
    /// (the access line's `isSentApart`), when the server has sent it or given up on it.
    private func finish(_ span: any Span, recording: Bool, _ request: HTTPRequest, _ response: inout HTTPResponse, route: RequestSeries.Route) {
        guard recording else { return span.end() }
        var attributes = span.attributes
        // `other` (no route) and the generic pass-through series name no route.
        if route != .other, route != .passThrough {
            let label = series.label(route)
            attributes["http.route"] = SpanAttribute.string(label)
            span.operationName = SpanMethod.name(request.method.description) + " " + label
        }
        attributes["http.response.status_code"] = SpanAttribute.int64(Int64(response.status))
        response.headers.lines.firstValues(named: ["Cache-Status", "Larder-Parts"]) { name, value in
            if name == 1 {
                attributes[SpanNames.aggregateParts] = SpanAttribute.string(value)
            } else {
                attributes[SpanNames.cacheStatus] = SpanAttribute.string(value)
                if let tier = Self.tier(value) { attributes[SpanNames.cacheTier] = SpanAttribute.string(tier) }
            }
        }
        if let outcome = Self.outcome(response.cacheOutcome) { attributes[SpanNames.cacheOutcome] = SpanAttribute.string(outcome) }
        if response.status >= 500 {
            attributes["error.type"] = SpanAttribute.string(String(response.status))
            span.setStatus(SpanStatus(code: .error))
        }
        span.attributes = attributes
        guard request.method != .head, Self.isSentApart(response.body) else { return span.end() }
        let logged = response.bodySent
        response.bodySent = { sent in
            logged?(sent)
            span.end()
        }
    }

    /// `Host` as `server.address` and `server.port` (80 when it names none: Larder speaks
    /// plain HTTP); nil when it is empty.
    static func server(_ host: String) -> (String, Int)? {
        guard !host.isEmpty else { return nil }
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            let address = String(host[host.index(after: host.startIndex)..<close])
            let rest = host[host.index(after: close)...]
            return (address, rest.hasPrefix(":") ? Int(rest.dropFirst()) ?? 80 : 80)
        }
        guard let colon = host.lastIndex(of: ":") else { return (host, 80) }
        return (String(host[..<colon]), Int(host[host.index(after: colon)...]) ?? 80)
    }

    /// The tier that answered, read from a `Cache-Status` value: a hit's `detail`, else the
    /// upstream (`fwd=`); nil for a value that says neither.
    static func tier(_ status: String) -> String? {
        var (hit, forwarded, detail): (Bool, Bool, String?) = (false, false, nil)
        for member in status.utf8.split(separator: UInt8(ascii: ";")) {
            let member = member.drop { $0 == UInt8(ascii: " ") }
            if member.elementsEqual("hit".utf8) { hit = true }
            else if member.elementsEqual("detail=disk".utf8) { detail = "disk" }
            else if member.elementsEqual("detail=redis".utf8) { detail = "redis" }
            else if member.starts(with: "fwd=".utf8) { forwarded = true }
        }
        if hit { return detail ?? "memory" }
        return forwarded ? "upstream" : nil
    }

    static func outcome(_ outcome: CacheOutcome) -> String? {
        switch outcome {
        case .none: nil
        case .hit: "hit"
        case .stale: "stale"
        case .miss: "miss"
        case .standIn: "stand-in"
        }
    }

    /// `trace_id` and `span_id` in an access line.
    static func add(_ trace: TraceIDs, to fields: inout Logger.Metadata) {
        fields["trace_id"] = .string(trace.traceID)
        fields["span_id"] = .string(trace.spanID)
    }
}

/// The span attributes Larder adds to OpenTelemetry's conventions, named once.
public enum SpanNames {
    /// The whole `Cache-Status` value, as sent.
    public static let cacheStatus = "larder.cache.status"
    /// `hit`, `stale`, `miss` or `stand-in` (a stored answer served for a failed fetch).
    public static let cacheOutcome = "larder.cache.outcome"
    /// The tier that answered: `memory`, `disk`, `redis`, or `upstream`.
    public static let cacheTier = "larder.cache.tier"
    /// An aggregate's `Larder-Parts`: how each part was answered.
    public static let aggregateParts = "larder.aggregate.parts"
}
