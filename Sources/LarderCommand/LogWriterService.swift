import Observability
import ServiceLifecycle

/// The log writer's thread as a member of the service group, listed first so it stops last:
/// once Larder has drained and the trace exporter has flushed, it writes what is queued and
/// ends the thread, and the process exits with every line of the stop written.
struct LogWriterService: Service {
    func run() async throws {
        try? await gracefulShutdown()
        await LogOutput.stopWriter()
    }
}
