#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import Observability
import Settings
import Synchronization

/// The performance gate's planted regression: with `LARDER_BENCH_PLANT_ALLOCATION=1`, every
/// log line, and so every logged request's access line, makes one more heap allocation on
/// the event loop that writes it, through a handler wrapped around Larder's own. The gate
/// must refuse the logged memory-hit path then (`scripts/gate/gate.py --prove-refusal`).
/// Without the variable the bench logs through `LogOutput` alone, as `larder serve` does.
struct PlantedAllocation: LogHandler {
    var inner: LogOutput

    static func bootstrapLogging(level: String, format: ServeSettings.LogFormat) {
        let level = ServeSettings.logLevel(named: level) ?? .info
        let format: LogOutput.Format = format == .json ? .json : .text
        guard ProcessInfo.processInfo.environment["LARDER_BENCH_PLANT_ALLOCATION"] == "1" else {
            return LogOutput.bootstrap(level: level, format: format)
        }
        LoggingSystem.bootstrap { PlantedAllocation(inner: LogOutput(label: $0, level: level, format: format)) }
    }

    /// Where each allocation's address goes, so the optimiser cannot leave it out.
    private static let kept = Atomic<Int>(0)

    func log(event: LogEvent) {
        let block = malloc(48)
        Self.kept.store(Int(bitPattern: block), ordering: .relaxed)
        free(block)
        inner.log(event: event)
    }

    var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }
}
