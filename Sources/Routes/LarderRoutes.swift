import Caching
import Foundation
import HTTPServer
import Observability
import Settings

/// Larder's API routes on the caches: each `BuiltInRoute` (`/weather`, `/balance`), and
/// `/overview`, which answers both in one body.
///
/// Each handler answers a memory hit at once, on the event loop thread; anything else
/// (disk, upstream, single flight) runs in a Task and is posted back.
public struct LarderRoutes: Sendable {
    /// A built-in route with its cache; no cache when the route has no upstream configured
    /// (then it answers 503).
    public struct Mounted: Sendable {
        public let route: BuiltInRoute
        public let cache: Cache?

        public init(route: BuiltInRoute, cache: Cache?) {
            self.route = route
            self.cache = cache
        }
    }

    let settings: ServeSettings
    let weather: Mounted
    let balance: Mounted
    let metrics: LarderMetrics

    public init(settings: ServeSettings, weather: Mounted, balance: Mounted, metrics: LarderMetrics) {
        self.settings = settings
        self.weather = weather
        self.balance = balance
        self.metrics = metrics
    }

    /// The handler of one built-in route.
    public func handler(_ mounted: Mounted) -> HTTPHandler {
        { [self] request in
            do throws(HTTPResponseError) {
                return lookUp(try locate(mounted, request), request: request)
            } catch {
                return .now(error.response)
            }
        }
    }

    /// One part of an answer: the route's name (for its errors), its cache, and the cache
    /// request for it. Not the whole route: a copy of its closures per request is not free.
    private struct Part {
        let name: String
        let cache: Cache
        let request: CacheRequest
    }

    /// The cache request a route makes of an HTTP request, or the response that refuses it
    /// (400 naming a bad parameter, 503 without an upstream). Thrown, not a `Result`: taking
    /// the part out of a `Result` copied it on every request.
    private func locate(_ mounted: Mounted, _ request: HTTPRequest) throws(HTTPResponseError) -> Part {
        guard let cache = mounted.cache, let locate = mounted.route.locate else {
            throw HTTPResponseError(CachedResponse.notConfigured(part: mounted.route.name))
        }
        switch locate(request) {
        case .failure(let problem):
            throw HTTPResponseError(CachedResponse.badParameter(problem))
        case .success(let resource):
            return Part(name: mounted.route.name, cache: cache, request: CacheRequest(resource: resource, directives: RequestDirectives(request)))
        }
    }

    /// A memory hit answers at once on the loop thread; anything else goes async.
    private func lookUp(_ part: Part, request: HTTPRequest) -> HTTPHandlerResult {
        if let answer = part.cache.answerFromMemory(part.request) { return .now(Self.respond(answer, request: request, metrics: metrics)) }
        // The metrics, not `self`: a copy of the routes (settings and all) per miss is not free.
        return .later { [metrics] in
            switch await part.cache.answer(part.request) {
            case .success(let answer): Self.respond(answer, request: request, metrics: metrics)
            case .failure(let failure): CachedResponse.failure(failure, part: part.name)
            }
        }
    }

    private static func respond(_ answer: CacheAnswer, request: HTTPRequest, metrics: LarderMetrics) -> HTTPResponse {
        metrics.lookup(answer.status)
        return CachedResponse.make(answer, for: request, ranges: false)
    }

    // MARK: /overview

    public func overviewHandler(_ request: HTTPRequest) -> HTTPHandlerResult {
        let w: Part, b: Part
        do throws(HTTPResponseError) {
            (w, b) = (try locate(weather, request), try locate(balance, request))
        } catch {
            return .now(error.response)
        }
        if let wa = w.cache.answerFromMemory(w.request), let ba = b.cache.answerFromMemory(b.request) {
            return .now(overview(wa, ba, request: request))
        }
        return .later { [self] in
            async let wa = w.cache.answer(w.request)
            async let ba = b.cache.answer(b.request)
            switch (await wa, await ba) {
            case (.success(let wa), .success(let ba)): return overview(wa, ba, request: request)
            case (.failure(let failure), _): return CachedResponse.failure(failure, part: w.name)
            case (_, .failure(let failure)): return CachedResponse.failure(failure, part: b.name)
            }
        }
    }

    /// Both parts in one body; its lifetime is the shorter one and its age the older one.
    private func overview(_ w: CacheAnswer, _ b: CacheAnswer, request: HTTPRequest) -> HTTPResponse {
        let body = Array("{\"weather\":".utf8) + w.rendered.body + Array(",\"balance\":".utf8) + b.rendered.body + [0x7D]
        metrics.lookup(w.status)
        metrics.lookup(b.status)
        // Age and Date come from the older part, so the pair stays consistent for downstream caches.
        let older = w.age >= b.age ? w.entry : b.entry
        let lifetime = min(w.lifetime, b.lifetime)
        let rendered = RenderedResponse(json: body, date: older.date ?? older.responseTime,
                                        cacheControl: BuiltInRoute.cacheControl(.caller, settings: settings), lifetime: lifetime)
        let answer = CacheAnswer(response: StoredResponse(entry: older, rendered: rendered), age: max(w.age, b.age), lifetime: lifetime,
                                 status: Self.combined(w.status, b.status))
        return CachedResponse.make(answer, for: request, ranges: false)
    }

    /// One Cache-Status for an answer made of two: a hit only when both parts were hits;
    /// otherwise the part that went furthest to the upstream speaks for both.
    static func combined(_ a: CacheStatus, _ b: CacheStatus) -> CacheStatus {
        if a.hit && b.hit {
            // The tier further from memory speaks for both.
            let detail: CacheStatus.Detail = a.tier.ordinal >= b.tier.ordinal ? a.detail ?? .memory : b.detail ?? .memory
            return CacheStatus(hit: true, ttl: min(a.ttl ?? 0, b.ttl ?? 0), detail: detail)
        }
        func rank(_ s: CacheStatus) -> Int {
            switch s.forward { case .miss?, .method?: 3; case .stale?: 2; case .request?: 1; case nil: 0 }
        }
        var lead = rank(a) >= rank(b) ? a : b
        lead.stored = a.stored || b.stored
        lead.collapsed = a.collapsed || b.collapsed
        return lead
    }
}

/// A response that refuses a request before the cache is asked.
public struct HTTPResponseError: Error {
    public let response: HTTPResponse
    public init(_ response: HTTPResponse) { self.response = response }
}
