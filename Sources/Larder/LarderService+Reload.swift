import Foundation
import Logging
import Settings

/// A reload (`SIGHUP`, or the admin API's `POST /reload`): the configuration is read and
/// checked again; a bad one changes nothing, a good one's routes are swapped in whole.
extension LarderService {
    public func reload() async -> ReloadOutcome {
        guard let readSettings else {
            let reason = "no configuration file was given (--config or LARDER_CONFIG), so there is nothing to reload"
            logger.warning("configuration reload: \(reason)")
            return .unavailable(reason)
        }
        let read: ServeSettings
        do {
            read = try await readSettings()
        } catch {
            return refuse(error.problems)
        }
        guard let (next, restartNeeded) = routes.remake({ current in
            let (settings, restartNeeded) = Self.reloadable(read, over: current.settings)
            return (ServingRoutes(settings: settings, current.base), restartNeeded)
        }) else { return .unavailable("the service has not started") }
        let settings = next.settings
        metrics.configReloaded(success: true, at: Date().timeIntervalSince1970)
        logger.info("configuration reloaded", metadata: settings.summary)
        if !restartNeeded.isEmpty {
            logger.warning("configuration reload: \(restartNeeded.joined(separator: ", ")) changed and need a restart; the running values are kept")
        }
        next.describe(to: logger)
        return .reloaded(restartNeeded: restartNeeded)
    }

    private func refuse(_ problems: [String]) -> ReloadOutcome {
        metrics.configReloaded(success: false, at: nil)
        logger.error("configuration reload refused, nothing changed: \(problems.joined(separator: "; "))")
        return .refused(problems)
    }

    /// `read` with every setting that only a restart can change put back to `running`'s value,
    /// and the names of those that differed. The listener, the tiers, the upstream client,
    /// the admin listener, Redis and logging are made once at start; routes, upstream URLs,
    /// freshness, timeouts, limits and credentials are not.
    static func reloadable(_ read: ServeSettings, over running: ServeSettings) -> (ServeSettings, [String]) {
        var settings = read
        var changed: [String] = []
        func keep<Value: Equatable>(_ name: String, _ path: WritableKeyPath<ServeSettings, Value>) {
            if settings[keyPath: path] != running[keyPath: path] { changed.append(name) }
            settings[keyPath: path] = running[keyPath: path]
        }
        keep("host", \.host)
        keep("port", \.port)
        keep("event-loops", \.eventLoops)
        keep("unused-connections-per-client", \.unusedConnectionsPerClient)
        keep("cache-dir", \.cacheDirectory)
        keep("memory-limit", \.memoryLimit)
        keep("disk-limit", \.diskLimit)
        keep("max-request-body", \.maxRequestBody)
        keep("ca-file", \.caFile)
        keep("log-level", \.logLevel)
        keep("log-format", \.logFormat)
        keep("demo", \.demo)
        keep("built-in-routes", \.builtInRoutes)
        keep("admin-port", \.adminPort)
        keep("admin-host", \.adminHost)
        keep("admin-token-file", \.adminToken)
        keep("redis-url", \.redisURL)
        keep("redis-timeout", \.redisTimeout)
        keep("redis-prefix", \.redisPrefix)
        // With demo, upstreams not given point at the simulator started with the process.
        if running.demo {
            if !settings.weatherURLGiven { settings.weatherURL = running.weatherURL }
            if settings.balanceURL == nil { settings.balanceURL = running.balanceURL }
        }
        return (settings, changed)
    }
}
