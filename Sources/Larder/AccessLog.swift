import Caching
import HTTPServer
import Logging

/// One access log line and one request count per request, with route, status, cache
/// status and duration; wraps every handler so async answers are logged when they leave.
struct AccessLog: Sendable {
    let logger: Logger
    let series: RequestSeries
    let passThrough: PassThroughRoutes?

    func wrap(_ router: Router) -> HTTPHandler {
        { request in
            let start = ContinuousClock.now
            switch router.handle(request) {
            case .now(let response):
                record(request, response, start)
                return .now(response)
            case .later(let work):
                return .later {
                    let response = await work()
                    record(request, response, start)
                    return response
                }
            }
        }
    }

    private func record(_ request: HTTPRequest, _ response: HTTPResponse, _ start: ContinuousClock.Instant) {
        let route = series.route(of: request.path, passThrough: passThrough?.covers(request.path) == true)
        let cacheStatus = response.headers["cache-status"]
        series.record(route, status: response.status, result: Self.result(cacheStatus), duration: ContinuousClock.now - start)
        logger.info("\(request.method) \(request.target) \(response.status)", metadata: [
            "route": "\(series.label(route))",
            "status": "\(response.status)",
            "cache_status": "\(cacheStatus ?? "-")",
            "duration_ms": "\(((ContinuousClock.now - start).seconds * 1_000_000).rounded() / 1000)",
        ])
    }

    /// The cache result a `Cache-Status` value says (RFC 9211): a hit (stale when its ttl is
    /// negative), a stored answer standing in (`fwd=stale` with stale-if-error or a
    /// disconnected origin), anything else forwarded a miss; none without the field.
    static func result(_ cacheStatus: String?) -> RequestSeries.CacheResult {
        guard let cacheStatus else { return .none }
        if cacheStatus.hasPrefix("larder; hit") { return cacheStatus.contains("ttl=-") ? .stale : .hit }
        if cacheStatus.contains("detail=stale-if-error") || cacheStatus.contains("detail=disconnected") { return .stale }
        return .miss
    }
}
