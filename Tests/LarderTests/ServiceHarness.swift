import Caching
import Foundation
import HTTPServer
import Logging
import TestSupport
import Tracing
@testable import Larder
@testable import Settings

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
    static func start(reload: (@Sendable () async throws(ConfigurationError) -> ServeSettings)? = nil,
                      upstream: TestUpstream? = nil, cacheDirectory: String? = nil, clock: ManualClock = .besideOrigins(),
                      logger: Logger = quietLogger(), tracer: (any Tracer)? = nil,
                      _ configure: (inout ServeSettings) -> Void = { _ in }) throws -> ServiceHarness {
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
        let service = LarderService(settings: settings, logger: logger, clock: clock, readSettings: reload, tracer: tracer)
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

extension ManualClock {
    /// A test clock for a Larder in front of real origins: a whole second, one second behind
    /// real time. An origin's `Date` is whole seconds from the coarse wall clock, which can
    /// lag a tick behind `Date()`; a clock started at `Date()` itself could then be ahead of
    /// the origin's `Date` by a second just after a second turns, and that apparent age
    /// would add a second to `Age`. Started here, the clock is never ahead of an origin.
    static func besideOrigins() -> ManualClock {
        ManualClock(Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 1).rounded(.down)))
    }
}

/// Runs `body` with a started harness and always stops it (and its upstream).
func withLarder(reload: (@Sendable () async throws(ConfigurationError) -> ServeSettings)? = nil,
                upstream: TestUpstream? = nil, cacheDirectory: String? = nil, clock: ManualClock = .besideOrigins(),
                logger: Logger = ServiceHarness.quietLogger(), _ configure: (inout ServeSettings) -> Void = { _ in },
                _ body: (ServiceHarness) async throws -> Void) async throws {
    let harness = try ServiceHarness.start(reload: reload, upstream: upstream, cacheDirectory: cacheDirectory, clock: clock,
                                           logger: logger, configure)
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
