import Foundation
import Logging
public import Settings
import ServiceMetrics

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
            return refuse(error.shown)
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

    /// `read` with every setting that only a restart can change put back to `running`'s value
    /// (`ServeSettings.keepingRestartOnly`), and the names of those that differed.
    static func reloadable(_ read: ServeSettings, over running: ServeSettings) -> (ServeSettings, [String]) {
        let kept = read.keepingRestartOnly(from: running)
        var settings = kept.settings
        // With demo, upstreams not given point at the simulator started with the process.
        if running.demo {
            if !settings.weatherURLGiven { settings.weatherURL = running.weatherURL }
            if settings.balanceURL == nil { settings.balanceURL = running.balanceURL }
        }
        return (settings, kept.restartNeeded)
    }
}
