import Observability
public import Prometheus
import ServiceMetrics

/// The Prometheus backend behind the swift-metrics facade, and what `/metrics` writes of it.
/// The executable bootstraps `factory` as the process's metrics system and hands the same
/// exposition to its service; a service made without one (the tests, several in a process)
/// gets a registry of its own, so nothing depends on the process's one bootstrap.
public struct MetricsExposition: Sendable {
    public let registry: PrometheusCollectorRegistry
    /// swift-prometheus's factory over `registry`, told the buckets Larder's timers need.
    public let factory: PrometheusMetricsFactory

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets = [MetricFamily.upstreamDuration.name: LarderMetrics.upstreamBuckets]
        self.factory = factory
    }

    /// The registry's series, each family of Larder's with its `# HELP` line (the facade
    /// carries none, so swift-prometheus writes only `# TYPE`), then `hitPath`, the families
    /// the hit path counts outside the facade.
    public func render(hitPath: String) -> [UInt8] {
        var text = ""
        for line in registry.emitToString().split(separator: "\n") {
            if line.hasPrefix("# TYPE "), let name = line.split(separator: " ").dropFirst(2).first,
               let family = MetricFamily(rawValue: String(name)) {
                text += "# HELP \(family.name) \(family.help)\n"
            }
            text += line + "\n"
        }
        return Array((text + hitPath).utf8)
    }
}
