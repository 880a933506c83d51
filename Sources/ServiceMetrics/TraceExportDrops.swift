public import CoreMetrics
public import Logging
import Locking
import Observability
import Synchronization

/// Spans the trace exporter lost, counted and said once. swift-otel's batch processor keeps
/// at most `OTEL_BSP_MAX_QUEUE_SIZE` finished spans and drops the rest, so a slow or absent
/// collector never holds a request up; it reports only through its diagnostic logger: one
/// warning per export round with `dropped_count` when its queue was full, and one per batch
/// the collector did not take, with `batch_size`. `diagnosticHandler` is that logger's
/// handler: it counts both into `larder_trace_spans_dropped_total` (reason `queue_full` or
/// `export_failed`) and writes one line when spans start being lost, then none until a
/// batch is exported again. swift-otel's other warnings pass on to Larder's log.
public final class TraceExportDrops: Sendable {
    private struct State {
        /// Counted before the metrics were bound (none in practice: nothing is traced before the service starts).
        var pending: [String: Int] = [:]
        /// By reason, once bound.
        var counters: [String: Counter]?
        /// Whether spans were lost since the last batch exported: the line was written.
        var losing = false
        var total = 0
    }

    private let state = Locked(State())
    private let logger: Logger

    public static let reasons = ["queue_full", "export_failed"]

    /// `logger`: where the one line and swift-otel's warnings go.
    public init(logger: Logger) {
        var logger = logger
        logger[metadataKey: "component"] = "tracing"
        self.logger = logger
    }

    /// Counts through the swift-metrics facade into `factory` from now on (both reasons
    /// exported at 0, so an alert sees the first loss, as `LarderMetrics` exports them with
    /// tracing off too); bound only while tracing is on.
    public func bind(to factory: any MetricsFactory = MetricsSystem.factory) {
        let counters = Dictionary(uniqueKeysWithValues: Self.reasons.map {
            ($0, Counter(label: MetricFamily.traceSpansDropped.name, dimensions: [("reason", $0)], factory: factory))
        })
        let pending = state.withLock { state in
            state.counters = counters
            defer { state.pending = [:] }
            return state.pending
        }
        for (reason, count) in pending { counters[reason]?.increment(by: count) }
    }

    /// Spans lost so far, both reasons together.
    public var total: Int { state.withLock { $0.total } }

    /// The handler of swift-otel's diagnostic logger.
    public var diagnosticHandler: any LogHandler { DiagnosticHandler(drops: self) }

    func dropped(_ count: Int, reason: String, error: String?) {
        guard count > 0 else { return }
        let (counter, announce, total) = state.withLock { state in
            state.total += count
            if state.counters == nil { state.pending[reason, default: 0] += count }
            defer { state.losing = true }
            return (state.counters?[reason], !state.losing, state.total)
        }
        counter?.increment(by: count)
        guard announce else { return }
        var metadata: Logger.Metadata = ["reason": .string(reason), "dropped": .stringConvertible(total)]
        if let error { metadata["error"] = .string(error) }
        logger.warning("trace spans dropped: the collector is slow or unreachable; counted in larder_trace_spans_dropped_total, said again only after an export succeeds",
                       metadata: metadata)
    }

    func exported() {
        state.withLock { $0.losing = false }
    }

    func pass(_ event: LogEvent) {
        var metadata = event.metadata ?? [:]
        if let error = event.error { metadata["error"] = .string("\(error)") }
        logger.log(level: event.level, "otel: \(event.message)", metadata: metadata)
    }

    /// What swift-otel 1.6.0 logs: its messages are matched as written there (a test holds a
    /// real exporter to them, so a new version that words them otherwise fails it).
    struct DiagnosticHandler: LogHandler {
        let drops: TraceExportDrops
        var metadata: Logger.Metadata = [:]

        /// Everything is looked at, whatever `OTEL_LOG_LEVEL` asks: the export's success is a debug line.
        var logLevel: Logger.Level {
            get { .debug }
            set {}
        }

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let message = event.message.description
            let fields = metadata.merging(event.metadata ?? [:]) { _, new in new }
            func number(_ key: String) -> Int { fields[key].flatMap { Int("\($0)") } ?? 0 }
            switch message {
            case "Spans were dropped this iteration because queue was full":
                drops.dropped(number("dropped_count"), reason: "queue_full", error: nil)
            case "Failed to export batch.":
                drops.dropped(number("batch_size"), reason: "export_failed", error: event.error.map { "\($0)" })
            case "Exported batch.":
                drops.exported()
            default:
                if event.level >= .warning { drops.pass(event) }
            }
        }
    }
}
