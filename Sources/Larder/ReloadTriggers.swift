import ServiceLifecycle
import UnixSignals

/// What reloads the configuration while the service runs: SIGHUP, and a change to the
/// configuration file (`ConfigFileWatch`). A service in the group beside `LarderService`,
/// so a graceful stop ends it and waits for a reload it began before the service drains.
struct ReloadTriggers: Service {
    let hangups: UnixSignalsSequence?
    let watch: ConfigFileWatch?
    let reload: @Sendable () async -> Void

    func run() async throws {
        // Cancelled at a graceful stop: the signal stream and the watch's sleep end at once,
        // and a reload under way finishes first (its read is not cancellable).
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                if let hangups {
                    group.addTask {
                        for await _ in hangups { await reload() }
                    }
                }
                if let watch { group.addTask { await watch.run(reload) } }
            }
        }
    }
}
