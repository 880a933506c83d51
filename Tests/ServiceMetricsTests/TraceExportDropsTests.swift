import Logging
import MetricsTestKit
import Testing
import TestSupport
@testable import ServiceMetrics

/// swift-otel's diagnostic lines about lost spans, as its 1.6.0 batch processor writes them,
/// are counted and said once per run of losses; its other warnings pass on, its chatter does not.
@Suite struct TraceExportDropsTests {
    /// The diagnostic logger as swift-otel makes it: its level set from OTEL_LOG_LEVEL, here `error`.
    static func diagnostic(_ drops: TraceExportDrops) -> Logger {
        var logger = Logger(label: "otel") { _ in drops.diagnosticHandler }
        logger.logLevel = .error
        return logger
    }

    struct Refused: Error {}

    @Test func lostSpansAreCountedAndSaidOnceUntilABatchIsExported() {
        let lines = RecordedLog()
        let drops = TraceExportDrops(logger: lines.logger(level: .trace))
        let otel = Self.diagnostic(drops)
        otel.warning("Spans were dropped this iteration because queue was full", metadata: ["queue_size": "4", "dropped_count": "7"])
        var batch = otel
        batch[metadataKey: "batch_id"] = "3"
        batch[metadataKey: "batch_size"] = "4"
        batch.warning("Failed to export batch.", error: Refused())
        otel.warning("Spans were dropped this iteration because queue was full", metadata: ["dropped_count": "2"])
        #expect(drops.total == 13)
        #expect(lines.all.count == 1)
        #expect(lines.all.first?.metadata["reason"] == "queue_full" && lines.all.first?.metadata["component"] == "tracing")
        // A batch through: the next loss is said again, with the total so far.
        batch.debug("Exported batch.")
        batch.warning("Failed to export batch.", error: Refused())
        #expect(drops.total == 17)
        #expect(lines.all.count == 2)
        #expect(lines.all.last?.metadata["reason"] == "export_failed" && lines.all.last?.metadata["dropped"] == "17")
        #expect(lines.all.last?.metadata["error"] != nil)
    }

    /// Bound to a metrics backend, both reasons are there at 0, then count what is lost
    /// (what was lost before, too).
    @Test func lossesAreCountedThroughTheFactoryBound() throws {
        let lines = RecordedLog()
        let drops = TraceExportDrops(logger: lines.logger(level: .trace))
        let otel = Self.diagnostic(drops)
        otel.warning("Spans were dropped this iteration because queue was full", metadata: ["dropped_count": "2"])
        let backend = TestMetrics()
        drops.bind(to: backend)
        #expect(try backend.expectCounter("larder_trace_spans_dropped_total", [("reason", "export_failed")]).totalValue == 0)
        otel.warning("Spans were dropped this iteration because queue was full", metadata: ["dropped_count": "5"])
        #expect(try backend.expectCounter("larder_trace_spans_dropped_total", [("reason", "queue_full")]).totalValue == 7)
    }

    @Test func otherWarningsPassOnAndDebugLinesDoNot() {
        let lines = RecordedLog()
        let drops = TraceExportDrops(logger: lines.logger(level: .trace))
        let otel = Self.diagnostic(drops)
        otel.debug("Consuming from span stream.")
        otel.info("Shutting down.")
        otel.warning("Force flush failed.", error: Refused())
        #expect(lines.all.count == 1)
        #expect(lines.all.first?.level == .warning && lines.all.first?.message == "otel: Force flush failed.")
        #expect(drops.total == 0)
    }
}
