import UnixSignals
import Logging
public import ServiceLifecycle
import Settings

/// `larder upstream-sim`: the simulator as a service that drains on SIGTERM.
public final class SimulatorService: Service {
    private let simulator: UpstreamSimulator
    private let logger = Logger(label: "larder.upstream-sim")

    public init(settings: UpstreamSimulator.Settings) {
        simulator = UpstreamSimulator(settings: settings, logger: logger)
    }

    /// Binds inside the service group, after its signal handlers are in place.
    public func run() async throws {
        do {
            try simulator.start()
        } catch {
            throw ConfigurationError("cannot start the upstream simulator: \(error)")
        }
        logger.info("listening on http://\(simulator.settings.host):\(simulator.port ?? 0)")
        try? await gracefulShutdown()
        await simulator.shutdown()
    }

    public func runUntilSignalled() async throws {
        try await ServiceGroup(configuration: .init(services: [.init(service: self)], gracefulShutdownSignals: [.sigterm, .sigint],
                                                    logger: logger)).run()
    }
}
