import Logging
import Synchronization
import Testing
@testable import ServiceMetrics

/// swift-otel's diagnostic lines about lost spans, as its 1.6.0 batch processor writes them,
/// are counted and said once per run of losses; its other warnings pass on, its chatter does not.
@Suite struct TraceExportDropsTests {
    /// Keeps every line a logger writes.
    final class Lines: Sendable {
        let lines = Mutex<[(Logger.Level, String, Logger.Metadata)]>([])
        var all: [(Logger.Level, String, Logger.Metadata)] { lines.withLock { $0 } }

        var logger: Logger { Logger(label: "test") { _ in Handler(lines: self) } }

        struct Handler: LogHandler {
            let lines: Lines
            var metadata: Logger.Metadata = [:]
            var logLevel: Logger.Level = .trace
            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }
            func log(event: LogEvent) {
                let fields = metadata.merging(event.metadata ?? [:]) { _, new in new }
                lines.lines.withLock { $0.append((event.level, event.message.description, fields)) }
            }
        }
    }

    /// The diagnostic logger as swift-otel makes it: its level set from OTEL_LOG_LEVEL, here `error`.
    static func diagnostic(_ drops: TraceExportDrops) -> Logger {
        var logger = Logger(label: "otel") { _ in drops.diagnosticHandler }
        logger.logLevel = .error
        return logger
    }

    struct Refused: Error {}

    @Test func lostSpansAreCountedAndSaidOnceUntilABatchIsExported() {
        let lines = Lines()
        let drops = TraceExportDrops(logger: lines.logger)
        var otel = Self.diagnostic(drops)
        otel.warning("Spans were dropped this iteration because queue was full", metadata: ["queue_size": "4", "dropped_count": "7"])
        var batch = otel
        batch[metadataKey: "batch_id"] = "3"
        batch[metadataKey: "batch_size"] = "4"
        batch.warning("Failed to export batch.", error: Refused())
        otel.warning("Spans were dropped this iteration because queue was full", metadata: ["dropped_count": "2"])
        #expect(drops.total == 13)
        #expect(lines.all.count == 1)
        #expect(lines.all.first?.2["reason"] == "queue_full" && lines.all.first?.2["component"] == "tracing")
        // A batch through: the next loss is said again, with the total so far.
        batch.debug("Exported batch.")
        batch.warning("Failed to export batch.", error: Refused())
        #expect(drops.total == 17)
        #expect(lines.all.count == 2)
        #expect(lines.all.last?.2["reason"] == "export_failed" && lines.all.last?.2["dropped"]?.description == "17")
        #expect(lines.all.last?.2["error"] != nil)
    }

    @Test func otherWarningsPassOnAndDebugLinesDoNot() {
        let lines = Lines()
        let drops = TraceExportDrops(logger: lines.logger)
        let otel = Self.diagnostic(drops)
        otel.debug("Consuming from span stream.")
        otel.info("Shutting down.")
        otel.warning("Force flush failed.", error: Refused())
        #expect(lines.all.count == 1)
        #expect(lines.all.first?.0 == .warning && lines.all.first?.1 == "otel: Force flush failed.")
        #expect(drops.total == 0)
    }
}
