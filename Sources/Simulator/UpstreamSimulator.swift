import Caching
import Crypto
import Foundation
import HTTPCore
public import HTTPServer
public import Logging
import Synchronization
import Routes

/// Both upstream APIs on loopback, for `make run`, tests and docker compose: Open-Meteo's
/// current weather at `/v1/forecast` and the balance JSON at `/balance`, each with
/// `Cache-Control: max-age`, `ETag`, `Last-Modified`, 304 on conditional requests, an
/// optional latency and an optional share of 503 failures.
///
/// Values are a deterministic function of the place and the 15-minute interval (as
/// Open-Meteo updates current weather), so every request in one interval agrees.
public final class UpstreamSimulator: Sendable {
    public struct Settings: Sendable {
        public var host = "127.0.0.1"
        public var port = 8081
        public var latency: Duration = .milliseconds(80)
        /// Share of requests answered 503, from 0 to 1.
        public var errorRate = 0.0
        public var maxAge = 60
        public init() {}
    }

    public let settings: Settings
    public let server: HTTPServer
    private let requests = Atomic<Int>(0)

    public init(settings: Settings, logger: Logger = Logger(label: "larder.upstream-sim")) {
        self.settings = settings
        var configuration = HTTPServerConfiguration(host: settings.host, port: settings.port)
        configuration.eventLoops = 1
        let counter = CounterBox()
        var router = Router()
        router.get("/v1/forecast") { request in Self.delayed(settings, counter) { Self.weather(request, settings) } }
        router.get("/balance") { request in Self.delayed(settings, counter) { Self.balance(request, settings) } }
        // How many upstream requests arrived: benchmarks and demos check caches asked once per key.
        router.get("/_sim/requests") { _ in
            .now(HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "application/json"), ("Cache-Control", "no-store")]),
                              body: "{\"requests\":\(counter.value.load(ordering: .relaxed))}"))
        }
        server = HTTPServer(configuration: configuration, logger: logger, handler: router.handler)
        requestCounter = counter
    }

    private let requestCounter: CounterBox

    /// Requests received so far (tests count upstream calls with it).
    public var requestCount: Int { requestCounter.value.load(ordering: .relaxed) }

    public func start() throws { try server.start() }
    public var port: Int? { server.port }
    public func shutdown() async { await server.shutdown() }

    final class CounterBox: Sendable { let value = Atomic<Int>(0) }

    private static func delayed(_ settings: Settings, _ counter: CounterBox, _ answer: @escaping @Sendable () -> HTTPResponse) -> HTTPHandlerResult {
        counter.value.add(1, ordering: .relaxed)
        if settings.errorRate > 0, Double.random(in: 0..<1) < settings.errorRate {
            return .now(HTTPResponse(status: 503, headers: HTTPHeaders([("Content-Type", "application/json")]),
                                     body: "{\"error\":true,\"reason\":\"simulated failure\"}"))
        }
        guard settings.latency > .zero else { return .now(answer()) }
        return .later {
            try? await Task.sleep(for: settings.latency)
            return answer()
        }
    }

    /// The 15-minute interval now: its start, as epoch seconds.
    private static func interval() -> Int { Int(Date().timeIntervalSince1970) / 900 * 900 }

    private static func seed(_ text: String) -> UInt64 {
        SHA256.hash(data: Array(text.utf8)).prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    static func weather(_ request: HTTPRequest, _ settings: Settings) -> HTTPResponse {
        var parameters: [Substring: Substring] = [:]
        for pair in (request.query ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { parameters[parts[0]] = parts[1] }
        }
        guard let latitude = parameters["latitude"].flatMap({ Double($0) }), let longitude = parameters["longitude"].flatMap({ Double($0) }) else {
            return HTTPResponse(status: 400, headers: HTTPHeaders([("Content-Type", "application/json")]),
                                body: "{\"error\":true,\"reason\":\"latitude and longitude are required\"}")
        }
        let start = interval()
        let random = seed("\(latitude),\(longitude),\(start)")
        let temperature = Double(Int(random % 400) - 100) / 10
        let codes = WeatherCondition.descriptions.keys.sorted()
        let code = codes[Int((random >> 16) % UInt64(codes.count))]
        let time = UTCTime(epochSeconds: start).iso8601.prefix(16)
        let body = CannedAnswers.openMeteo(latitude: "\(latitude)", longitude: "\(longitude)", time: String(time),
                                           temperature: "\(temperature)", weatherCode: code)
        return validated(request, body: body, lastModified: start, settings: settings)
    }

    static func balance(_ request: HTTPRequest, _ settings: Settings) -> HTTPResponse {
        let start = interval()
        let cents = 100_000 + Int(seed("balance,\(start)") % 900_000)
        let date = UTCTime(epochSeconds: start).text(separator: " ", zone: " +0000")
        let body = CannedAnswers.balance("\(cents / 100).\(cents % 100 < 10 ? "0" : "")\(cents % 100)", date: date)
        return validated(request, body: body, lastModified: start, settings: settings)
    }

    /// The answer with its validators, or 304 when the request's validators still match.
    private static func validated(_ request: HTTPRequest, body: String, lastModified: Int, settings: Settings) -> HTTPResponse {
        let etag = RenderedResponse.etag(of: Array(body.utf8))
        let modified = HTTPDate.format(epochSeconds: lastModified)
        let headers = HTTPHeaders([("Cache-Control", "max-age=\(settings.maxAge)"), ("ETag", etag), ("Last-Modified", modified)])
        let notModified: Bool
        if let tags = request.headers["if-none-match"] {
            notModified = EntityTag.ifNoneMatch([tags], matches: etag)
        } else if let since = request.headers["if-modified-since"] {
            notModified = since == modified
        } else {
            notModified = false
        }
        if notModified { return HTTPResponse(status: 304, headers: headers) }
        var full = headers
        full.add("Content-Type", "application/json")
        return HTTPResponse(status: 200, headers: full, body: body)
    }
}
