import HTTPCore
import Foundation
import HTTPServer
import Synchronization
import Locking
import Simulator

/// A test upstream on the project's own server that does what the test script says:
/// Open-Meteo and balance answers by default, or any status, body, headers and delay.
/// It counts requests per path and keeps the last request's header fields.
final class TestUpstream: Sendable {
    struct Script: Sendable {
        var status = 200
        /// The `max-age` sent; nil sends no `Cache-Control` (Larder's default lifetime applies).
        var maxAge: Int? = 60
        var extraHeaders: [(String, String)] = []
        var delay: Duration = .zero
        /// Replaces the normal body (e.g. garbage).
        var body: String?
        /// Answer 304 when the request's If-None-Match equals this.
        var notModifiedFor: String? = "\"upstream-v1\""
    }

    let server: HTTPServer
    private final class Shared: Sendable {
        let script = Locked(Script())
        let counts = Locked<[String: Int]>([:])
        let seen = Locked<[HTTPRequest]>([])
        /// Delayed requests being answered now, and the most there ever were at once.
        let concurrent = Locked<(now: Int, most: Int)>((0, 0))
    }
    private let shared = Shared()

    init() throws {
        let shared = self.shared
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.eventLoops = 1
        server = HTTPServer(configuration: configuration) { request in
            shared.counts.withLock { $0[String(request.path), default: 0] += 1 }
            shared.seen.withLock { $0.append(request) }
            let current = shared.script.withLock { $0 }
            let respond: @Sendable () -> HTTPResponse = { Self.answer(request, current) }
            guard current.delay > .zero else { return .now(respond()) }
            return .later {
                shared.concurrent.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
                try? await Task.sleep(for: current.delay)
                shared.concurrent.withLock { $0.now -= 1 }
                return respond()
            }
        }
        try server.start()
    }

    func stop() async { await server.shutdown() }

    var port: Int { server.port! }
    var weatherURL: String { "http://127.0.0.1:\(port)/v1/forecast" }
    var balanceURL: String { "http://127.0.0.1:\(port)/balance" }

    func update(_ change: (inout Script) -> Void) { shared.script.withLock { change(&$0) } }
    func count(_ path: String) -> Int { shared.counts.withLock { $0[path] ?? 0 } }
    var requests: [HTTPRequest] { shared.seen.withLock { $0 } }
    /// The most delayed requests that were in progress at the same time.
    var mostConcurrent: Int { shared.concurrent.withLock { $0.most } }

    private static func answer(_ request: HTTPRequest, _ script: Script) -> HTTPResponse {
        var headers = HTTPHeaders([("ETag", "\"upstream-v1\"")])
        if let maxAge = script.maxAge { headers.add("Cache-Control", "max-age=\(maxAge)") }
        for (name, value) in script.extraHeaders { headers.add(name, value) }
        if let tag = script.notModifiedFor, request.headers["if-none-match"] == tag, script.status == 200 {
            return HTTPResponse(status: 304, headers: headers)
        }
        let body = script.body ?? (request.path == "/balance"
            ? CannedAnswers.balance("1234.56", date: "2021-06-02 11:01:48 +0000")
            : CannedAnswers.openMeteo(latitude: "52.52", longitude: "13.419998", time: "2026-11-21T20:45", temperature: "3.2", weatherCode: 3))
        headers.add("Content-Type", "application/json")
        return HTTPResponse(status: script.status, headers: headers, body: body)
    }
}
