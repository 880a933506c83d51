import HTTPServer
import Logging
import ServiceLifecycle

/// The Larder service: its routes on an `HTTPServer`, run under swift-service-lifecycle
/// so SIGTERM and SIGINT drain in-flight requests before the process exits.
public final class LarderService: Service {
    public let settings: ServeSettings
    public let server: HTTPServer
    private let logger: Logger

    public init(settings: ServeSettings, logger: Logger = Logger(label: "larder")) {
        self.settings = settings
        self.logger = logger
        self.server = HTTPServer(configuration: settings.serverConfiguration, logger: logger,
                                 handler: Self.makeRouter().handler)
    }

    static func makeRouter() -> Router {
        var router = Router()
        router.get("/livez") { _ in .now(OperationalResponse.livez) }
        return router
    }

    /// Binds the listeners; a failure here (port in use, bad address) is a start failure.
    public func start() throws {
        try server.start()
        let port = server.port ?? settings.port
        let host = settings.host.contains(":") ? "[\(settings.host)]" : settings.host
        logger.info("listening on http://\(host):\(port)")
    }

    /// Serves until a graceful shutdown is requested, then drains.
    public func run() async throws {
        try? await gracefulShutdown()
        logger.info("stopping: draining connections")
        await server.shutdown()
        logger.info("stopped")
    }

    /// Runs the started service until SIGTERM or SIGINT.
    public func runWithoutStarting() async throws {
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: self)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        try await group.run()
    }
}

/// Fixed responses of the operational endpoints; they carry `Cache-Control: no-store`.
enum OperationalResponse {
    static let livez = HTTPResponse(
        status: 200,
        headers: HTTPHeaders([("Content-Type", "application/json"), ("Cache-Control", "no-store")]),
        body: "{\"status\":\"pass\"}")
}
