import ServiceLifecycle

/// Work a stop must do, as a member of the service group: it waits for the group's graceful
/// shutdown (or its end), then does `stop`. Listed ahead of Larder's service, it stops after
/// it, the first listed last: the log writer writes every line of the stop and ends its
/// thread (`LogOutput.stopWriter`); the demo simulator answers until Larder has drained.
struct StopStep: Service {
    let stop: @Sendable () async -> Void

    func run() async throws {
        try? await gracefulShutdown()
        await stop()
    }
}
