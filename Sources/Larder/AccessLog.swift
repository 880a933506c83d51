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
        series.count(route, status: response.status)
        logger.info("\(request.method) \(request.target) \(response.status)", metadata: [
            "route": "\(series.label(route))",
            "status": "\(response.status)",
            "cache_status": "\(response.headers["cache-status"] ?? "-")",
            "duration_ms": "\(((ContinuousClock.now - start).seconds * 1_000_000).rounded() / 1000)",
        ])
    }
}
