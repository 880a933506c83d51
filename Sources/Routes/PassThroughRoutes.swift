public import Caching
import HTTPCore
import Bodies
public import HTTPServer
public import AccessLogging
public import ServiceMetrics
public import Settings

/// The pass-through routes (`--route PREFIX=ORIGIN`): a request under a prefix goes to its
/// origin through that route's `Cache` (the shared-cache policy), and the origin's answer
/// comes back as it was sent (hop-by-hop fields removed) with `Age` and `Cache-Status`. The
/// longest prefix wins; the built-in routes never reach here because the router tries them first.
public struct PassThroughRoutes: Sendable {
    public struct Route: Sendable {
        public let mount: RouteMount
        public let cache: Cache
        /// Its request series (labelled by its prefix) and origin's name: resolved once, not per request.
        public let labels: AccessLog.Labels

        public init(mount: RouteMount, cache: Cache, labels: AccessLog.Labels = AccessLog.Labels(series: .passThrough)) {
            self.mount = mount
            self.cache = cache
            self.labels = labels
        }
    }

    /// Longest prefix first, so the first route that covers a path is the one that wins.
    public let routes: [Route]
    let metrics: LarderMetrics

    public init(routes: [Route], metrics: LarderMetrics) {
        self.routes = routes.sorted { $0.mount.prefix.utf8.count > $1.mount.prefix.utf8.count }
        self.metrics = metrics
    }

    /// The labels of the route that covers the path, if one does (the access log labels the
    /// request with them).
    public func labels(covering path: Substring) -> AccessLog.Labels? { routes.first { $0.mount.covers(path) }?.labels }

    public var handler: HTTPHandler {
        let routes = self
        return { routes.handle($0) }
    }

    func handle(_ request: HTTPRequest) -> HTTPHandlerResult {
        guard let route = routes.first(where: { $0.mount.covers(request.path) }) else {
            return .now(ProblemDetails(status: 404, detail: "No resource at \(request.path).").response())
        }
        guard request.target.hasPrefix("/") else {
            return .now(ProblemDetails(status: 400, detail: "A pass-through route takes a path (origin-form) request target.").response())
        }
        if let reason = Self.ambiguity(in: request.path) {
            return .now(ProblemDetails(status: 400, detail: "The path holds \(reason), which an origin may read as a separator; it is refused.")
                .response())
        }
        let forwarded = Self.forwarded(request, mount: route.mount)
        if let answer = route.cache.answerFromMemory(forwarded) { return .now(respond(answer, to: request)) }
        return .later {
            switch await route.cache.answer(forwarded) {
            case .success(let answer): return respond(answer, to: request)
            case .failure(let failure):
                metrics.lookup(CacheStatus(forward: .miss))
                return CachedResponse.failure(failure, part: "origin")
            }
        }
    }

    /// What in a (normalised) path an origin could read as a separator Larder did not see, so
    /// that the path it serves is not the one Larder matched: a backslash (as Windows servers
    /// read it), an encoded `/` or `\`, or a dot segment with parameters (`..;`, which Tomcat
    /// reads as `..`). Nil when there is none.
    static func ambiguity(in path: Substring) -> String? {
        // One pass over the bytes: this runs for every pass-through request, hits included.
        var (beforeLast, last): (UInt8, UInt8) = (0, 0)
        var parameters = false
        for byte in path.utf8 {
            if byte == UInt8(ascii: "\\") { return "a backslash" }
            if beforeLast == UInt8(ascii: "%"), (last == UInt8(ascii: "2") && byte | 0x20 == UInt8(ascii: "f"))
                || (last == UInt8(ascii: "5") && byte | 0x20 == UInt8(ascii: "c")) {
                return "an encoded / or \\"
            }
            parameters = parameters || byte == UInt8(ascii: ";")
            (beforeLast, last) = (last, byte)
        }
        guard parameters else { return nil }
        for segment in path.split(separator: "/") where segment.hasPrefix(".;") || segment.hasPrefix("..;") {
            return "a dot segment with parameters (\(segment))"
        }
        return nil
    }

    /// The request as the origin gets it: same method, target and body (the target as the
    /// route's rules rewrite it); end-to-end fields only, then the route's fields, `Via` and
    /// `X-Forwarded-For`. `Host`, `Content-Length` and `Expect` belong to the next hop, which
    /// libcurl makes. A GET or HEAD carries a body only when it has content
    /// (`Content-Length: 0` is none); other methods keep an empty body they framed, so a
    /// `POST` with no content says so.
    static func forwarded(_ request: HTTPRequest, mount: RouteMount) -> CacheRequest {
        let endToEnd = HopByHop.removed(from: request.headers, dropping: ["host", "content-length", "expect"])
        let headers = mount.rules.fields(endToEnd, version: request.version == .http10 ? "1.0" : "1.1", client: request.clientAddress)
        let framed = request.headers.contains("content-length") || request.headers.contains("transfer-encoding")
        let hasBody = request.method == .get || request.method == .head ? !request.body.isEmpty : !request.body.isEmpty || framed
        return CacheRequest(method: request.method, resource: mount.caching.keyTarget(request.target),
                            url: mount.origin + mount.rules.target(request.target, prefix: mount.prefix), headers: headers,
                            body: hasBody ? request.body : nil)
    }

    private func respond(_ answer: CacheAnswer, to request: HTTPRequest) -> HTTPResponse {
        if request.method == .get || request.method == .head { metrics.lookup(answer.status) }
        return CachedResponse.make(answer, for: request, ranges: true)
    }
}
