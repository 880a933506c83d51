public import Caching
import Foundation
public import HTTPServer
public import ServiceMetrics
import Settings

/// Larder's API routes on the caches: each `BuiltInRoute` (`/weather`, `/balance`).
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

    let metrics: LarderMetrics

    public init(metrics: LarderMetrics) {
        self.metrics = metrics
    }

    /// The handler of one built-in route.
    public func handler(_ mounted: Mounted) -> HTTPHandler {
        { [self] request in
            do throws(HTTPResponseError) {
                return lookUp(try Self.locate(mounted, request), request: request)
            } catch {
                return .now(error.response)
            }
        }
    }

    /// One part of an answer: the route's name (for its errors), its cache, and the cache
    /// request for it. Not the whole route: a copy of its closures per request is not free.
    struct Part: Sendable {
        let name: String
        let cache: Cache
        let request: CacheRequest
    }

    /// The cache request a route makes of an HTTP request, or the response that refuses it
    /// (400 naming a bad parameter, 503 without an upstream). Thrown, not a `Result`: taking
    /// the part out of a `Result` copied it on every request.
    static func locate(_ mounted: Mounted, _ request: HTTPRequest) throws(HTTPResponseError) -> Part {
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
}

/// A response that refuses a request before the cache is asked.
public struct HTTPResponseError: Error {
    public let response: HTTPResponse
    public init(_ response: HTTPResponse) { self.response = response }
}
