import Caching
import Foundation
import HTTPServer
import Logging
import TestSupport
@testable import Larder

/// A real Larder on a free port, in this process, in front of a `TestUpstream`, with a
/// fresh cache directory and a clock the test moves. Requests go over a real socket.
struct ServiceHarness {
    let upstream: TestUpstream
    let service: LarderService
    let clock: ManualClock
    let cacheDirectory: String
    var port: Int { service.server!.port! }

    static func quietLogger() -> Logger {
        var logger = Logger(label: "larder-test")
        logger.logLevel = .critical
        return logger
    }

    /// Starts Larder; `configure` adjusts the settings (the upstream URLs are already set).
    static func start(upstream: TestUpstream? = nil, cacheDirectory: String? = nil, clock: ManualClock = ManualClock(Date()),
                      logger: Logger = quietLogger(), _ configure: (inout ServeSettings) -> Void = { _ in }) throws -> ServiceHarness {
        let upstream = try upstream ?? TestUpstream()
        let directory = cacheDirectory ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("larder-service-\(UUID().uuidString)").path
        var settings = ServeSettings()
        settings.port = 0
        settings.cacheDirectory = directory
        settings.weatherURL = upstream.weatherURL
        settings.balanceURL = upstream.balanceURL
        settings.upstreamTimeout = .seconds(5)
        configure(&settings)
        let service = LarderService(settings: settings, logger: logger, clock: clock)
        try service.start()
        return ServiceHarness(upstream: upstream, service: service, clock: clock, cacheDirectory: directory)
    }

    func stop() async {
        await service.stop()
    }

    /// One request on a new connection.
    func get(_ target: String, headers: [String] = [], method: String = "GET") async throws -> TestResponse {
        let client = try TestClient(port: port)
        let extra = headers.map { $0 + "\r\n" }.joined()
        try client.send("\(method) \(target) HTTP/1.1\r\nHost: larder\r\n\(extra)\r\n")
        return try await client.readResponse(bodyless: method == "HEAD")
    }
}

/// Runs `body` with a started harness and always stops it (and its upstream).
func withLarder(upstream: TestUpstream? = nil, cacheDirectory: String? = nil, clock: ManualClock = ManualClock(Date()),
                logger: Logger = ServiceHarness.quietLogger(), _ configure: (inout ServeSettings) -> Void = { _ in },
                _ body: (ServiceHarness) async throws -> Void) async throws {
    let harness = try ServiceHarness.start(upstream: upstream, cacheDirectory: cacheDirectory, clock: clock, logger: logger, configure)
    do {
        try await body(harness)
    } catch {
        await harness.stop()
        if upstream == nil { await harness.upstream.stop() }
        throw error
    }
    await harness.stop()
    if upstream == nil { await harness.upstream.stop() }
}
