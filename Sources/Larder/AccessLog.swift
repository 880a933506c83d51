import Caching
import HTTPCore
import HTTPServer
import Logging
import Synchronization

/// One access log line and the request series per request, wrapped around every handler so
/// async answers are logged when they leave. The line has the client address, method,
/// target, status, cache status, bytes, duration and request id; it is `info`, `warning`
/// for a stored answer standing in for a failed upstream, `error` for a 5xx, so
/// `--log-level warning` still shows an outage.
///
/// `X-Request-Id` is taken from the request when it is a usable id, else generated, and is
/// echoed in the response. A generated id is not added to the request itself: requests
/// share an upstream fetch only when all their fields agree, and a fresh id on each would
/// keep them apart.
struct AccessLog: Sendable {
    let logger: Logger
    let series: RequestSeries
    let passThrough: PassThroughRoutes?
    let requestIDs = RequestIDs()

    func wrap(_ router: Router) -> HTTPHandler {
        { request in
            let start = ContinuousClock.now
            let id = requestIDs.id(for: request.headers["x-request-id"])
            switch router.handle(request) {
            case .now(let response):
                return .now(record(request, response, id: id, start))
            case .later(let work):
                return .later {
                    record(request, await work(), id: id, start)
                }
            }
        }
    }

    private func record(_ request: HTTPRequest, _ response: HTTPResponse, id: String, _ start: ContinuousClock.Instant) -> HTTPResponse {
        var response = response
        response.headers.add("X-Request-Id", id)
        let duration = ContinuousClock.now - start
        let route = series.route(of: request.path, passThrough: passThrough?.covers(request.path) == true)
        let result = RequestSeries.CacheResult(rawValue: response.annotation) ?? .none
        series.record(route, status: response.status, result: result, duration: duration)
        let level: Logger.Level = response.status >= 500 ? .error : result == .standIn ? .warning : .info
        guard logger.logLevel <= level else { return response }
        var metadata: Logger.Metadata = [
            "client": .string(request.clientAddress),
            "route": .string(series.label(route)),
            "status": .stringConvertible(response.status),
            "cache_status": .string(response.headers["cache-status"] ?? "-"),
            "bytes": .stringConvertible(request.method == .head ? 0 : response.body.count),
            "duration_ms": .stringConvertible((duration.seconds * 1_000_000).rounded() / 1000),
            "request_id": .string(id),
        ]
        if let timing = response.headers["server-timing"], let upstream = Self.upstreamMilliseconds(timing) {
            metadata["upstream_ms"] = .stringConvertible(upstream)
        }
        logger.log(level: level, "\(request.method) \(request.target) \(response.status)", metadata: metadata)
        return response
    }

    /// The `dur` of the `upstream` metric in a Server-Timing value.
    static func upstreamMilliseconds(_ timing: String) -> Double? {
        guard let metric = timing.split(separator: ",").first(where: { $0.trimmingOWS().hasPrefix("upstream;") }),
              let duration = metric.split(separator: ";").first(where: { $0.trimmingOWS().hasPrefix("dur=") }) else { return nil }
        return Double(duration.trimmingOWS().dropFirst(4))
    }
}

/// Request ids: the client's when it is 1 to 128 visible ASCII characters, else a new one,
/// made of a random prefix per process and a counter (unique, and no system call per request).
final class RequestIDs: Sendable {
    private let prefix = String(UInt64.random(in: .min ... .max) & 0xFFFF_FFFF, radix: 16)
    private let next = Atomic<UInt64>(0)

    func id(for given: String?) -> String {
        if let given, (1...128).contains(given.utf8.count), given.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) { return given }
        let n = next.add(1, ordering: .relaxed).newValue
        return prefix + "-" + String(n, radix: 16)
    }
}
