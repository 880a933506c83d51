import HTTPCore
import Caching
import HTTPServer

/// The pass-through routes (`--route PREFIX=ORIGIN`): a request under a prefix goes to its
/// origin through that route's `SharedCache`, and the origin's answer comes back as it was
/// sent (hop-by-hop fields removed) with `Age` and `Cache-Status`. The longest prefix wins;
/// the built-in routes never reach here because the router tries them first.
struct PassThroughRoutes: Sendable {
    struct Route: Sendable {
        let mount: RouteMount
        let cache: SharedCache
    }

    /// Longest prefix first, so the first route that covers a path is the one that wins.
    let routes: [Route]
    let metrics: LarderMetrics

    init(routes: [Route], metrics: LarderMetrics) {
        self.routes = routes.sorted { $0.mount.prefix.utf8.count > $1.mount.prefix.utf8.count }
        self.metrics = metrics
    }

    /// Whether some route covers the path (the access log labels it `pass-through`).
    func covers(_ path: Substring) -> Bool { routes.contains { $0.mount.covers(path) } }

    var handler: HTTPHandler {
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
        let forwarded = Self.forwarded(request)
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

    /// The request as the origin gets it: same method, target and body; end-to-end fields
    /// only. `Host`, `Content-Length` and `Expect` belong to the next hop, which libcurl makes.
    /// A GET or HEAD carries a body only when it has content (`Content-Length: 0` is none);
    /// other methods keep an empty body they framed, so a `POST` with no content says so.
    static func forwarded(_ request: HTTPRequest) -> SharedCache.Request {
        let headers = HopByHop.removed(from: request.headers, dropping: ["host", "content-length", "expect"])
        let framed = request.headers.contains("content-length") || request.headers.contains("transfer-encoding")
        let hasBody = request.method == .get || request.method == .head ? !request.body.isEmpty : !request.body.isEmpty || framed
        return SharedCache.Request(method: request.method.description, target: request.target, headers: headers,
                                   body: hasBody ? request.body : nil)
    }

    private func respond(_ answer: SharedCache.Answer, to request: HTTPRequest) -> HTTPResponse {
        let entry = answer.entry
        let cacheable = request.method == .get || request.method == .head
        if cacheable { metrics.lookup(answer.status) }
        var headers = HTTPHeaders([("Age", String(answer.age)), ("Cache-Status", answer.status.description)])
        let notModified = cacheable && entry.status == 200 && Self.clientHasCurrentCopy(request, entry)
        let range = request.method == .get && entry.status == 200 && !notModified ? request.headers["range"] : nil
        if !notModified, range == nil, let prepared = answer.prepared as? PreparedFields {
            // A memory hit: the stored fields were rendered once, when the response was stored.
            return HTTPResponse(status: entry.status, headers: headers, prepared: prepared.fields, body: entry.body)
        }
        for field in entry.headers where !HTTPHeaders.namesEqual(field.name, "age") {
            // A 304 carries the validators and caching fields, not the metadata of a body it lacks.
            if notModified, Self.describesBody(field.name) { continue }
            headers.add(field.name, field.value)
        }
        if notModified { return HTTPResponse(status: 304, headers: headers) }
        if let range, Self.rangeApplies(request, entry) {
            switch ByteRange.select(range, length: entry.body.count) {
            case .whole:
                break
            case .partial(let r):
                headers.add("Content-Range", "bytes \(r.first)-\(r.last)/\(entry.body.count)")
                return HTTPResponse(status: 206, headers: headers, body: Array(entry.body[r.first...r.last]))
            case .unsatisfiable:
                var response = ProblemDetails(status: 416, detail: "The range \(range) is outside the \(entry.body.count) bytes stored.").response()
                response.headers.add("Content-Range", "bytes */\(entry.body.count)")
                return response
            }
        }
        var response = HTTPResponse(status: entry.status, headers: headers, body: entry.body)
        if request.method == .head, entry.body.isEmpty {
            response.headContentLength = entry.header("content-length").flatMap { Int($0) }
        }
        return response
    }

    /// RFC 9110 §13.2.2: `If-None-Match` when present, else `If-Modified-Since`.
    static func clientHasCurrentCopy(_ request: HTTPRequest, _ entry: CacheEntry) -> Bool {
        let tags = request.headers.values("if-none-match")
        if !tags.isEmpty {
            if let etag = entry.etag { return CachedResponse.ifNoneMatch(tags, matches: etag) }
            return tags.contains { $0.trimmingCharacters(in: .whitespaces) == "*" }
        }
        // RFC 9111 §4.3.2: without Last-Modified, the stored response's Date stands in for it.
        guard let since = request.headers["if-modified-since"].flatMap(HTTPDateParser.parse),
              let modified = entry.lastModified.flatMap(HTTPDateParser.parse) ?? entry.date else { return false }
        return modified <= since
    }

    /// RFC 9110 §13.1.5: with `If-Range`, a range only when the validator still matches
    /// (a strong ETag, or the exact Last-Modified date).
    static func rangeApplies(_ request: HTTPRequest, _ entry: CacheEntry) -> Bool {
        guard let condition = request.headers["if-range"] else { return true }
        if condition.hasPrefix("\"") { return entry.etag == condition }
        return entry.lastModified == condition
    }

    /// A stored response's fields rendered once, as a hit sends them: all but `Age` (sent
    /// fresh) and `Content-Length` (the server writes it).
    final class PreparedFields: Sendable, MemoryCosted {
        let fields: PreparedHeaders
        var memoryCost: Int { MemoryCost.allocation(16 + 24) + MemoryCost.array(bytes: fields.bytes.count) }

        init(_ entry: CacheEntry) {
            fields = PreparedHeaders(entry.headers.filter {
                !HTTPHeaders.namesEqual($0.name, "age") && !HTTPHeaders.namesEqual($0.name, "content-length")
            }.map { ($0.name, $0.value) })
        }
    }

    static func describesBody(_ name: String) -> Bool {
        let lower = name.lowercased()
        return lower.hasPrefix("content-") && lower != "content-location"
    }
}
