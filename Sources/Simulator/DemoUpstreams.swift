public import Logging
public import Settings

/// `larder serve --demo`: the upstream simulator in the same process on a loopback port, and
/// every upstream URL not given pointed at it, so Larder runs with no network at all.
public enum DemoUpstreams {
    /// Starts the simulator and points `settings` at it; stop the simulator after the service.
    public static func start(for settings: inout ServeSettings, logger: Logger) throws(ConfigurationError) -> UpstreamSimulator {
        var simulatorSettings = UpstreamSimulator.Settings()
        simulatorSettings.port = 0
        simulatorSettings.latency = .milliseconds(80)
        let simulator = UpstreamSimulator(settings: simulatorSettings, logger: logger)
        do {
            try simulator.start()
        } catch {
            throw ConfigurationError("cannot start the upstream simulator: \(error)")
        }
        let base = "http://127.0.0.1:\(simulator.port ?? 0)"
        if !settings.weatherURLGiven { settings.weatherURL = base + "/v1/forecast" }
        if settings.balanceURL == nil { settings.balanceURL = base + "/balance" }
        logger.info("demo: upstream simulator on port \(simulator.port ?? 0)")
        return simulator
    }
}
