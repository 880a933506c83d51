import Foundation
import Logging
import ServiceMetrics
#if OTLPExport
import OTel
#endif
import ServiceLifecycle
import Settings
import Tracing
import Upstream

/// The OpenTelemetry tracer of `larder serve` and the service that exports its spans over
/// OTLP/HTTP (swift-otel, traces only: its metrics and logs stay off). The service runs in
/// the service group ahead of Larder's, so a stop drains the requests first, then flushes
/// their spans. Spans wait in swift-otel's bounded batch queue (`OTEL_BSP_*`): a slow or
/// absent collector loses spans, counted by `TraceExportDrops`, and never holds a request up.
enum TraceExporter {
    static func make(_ export: TracingExport, drops: TraceExportDrops) throws -> (tracer: any Tracer, service: any Service) {
        #if OTLPExport
        var configuration = OTel.Configuration.default
        // Each may be changed by its OTEL_* variable, which swift-otel applies over these.
        configuration.serviceName = "larder"
        configuration.resourceAttributes["service.version"] = Version.current
        configuration.diagnosticLogger = .custom(Logger(label: "otel") { _ in drops.diagnosticHandler })
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.exporter = .otlp
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        // A batch the collector has not taken in 3 s is dropped (OTEL_BSP_EXPORT_TIMEOUT; the
        // spec's default is 30 s): a stop then waits at most 6 s for an absent collector (the
        // batch under way, then the queue's), within the 8 s Larder stops in.
        configuration.traces.batchSpanProcessor.exportTimeout = .seconds(3)
        // A URL set here is taken as is, so it is given with the signal's path.
        if export.givenEndpoint != nil { configuration.traces.otlpExporter.endpoint = export.tracesURL }
        if let sampler = OTel.Configuration.TracesConfiguration.SamplerConfiguration.parentBasedTraceIDRatio(ratio: export.ratio ?? 1) {
            configuration.traces.sampler = sampler
        }
        // An empty variable is an unset one (the OpenTelemetry spec; compose passes `${VAR:-}` so);
        // swift-otel reads the process's environment and would take it as a value.
        for (name, value) in ProcessInfo.processInfo.environment where name.hasPrefix("OTEL_") && value.isEmpty { unsetenv(name) }
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        return (backend.factory, backend.service)
        #else
        throw ConfigurationError("this larder was built without the OTLP exporter (the OTLPExport trait)")
        #endif
    }
}
