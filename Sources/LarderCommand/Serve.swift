import ArgumentParser
import CoreMetrics
import Foundation
import Larder
import Logging
import Observability
import ServiceMetrics
import Settings
import ServiceLifecycle
import Simulator
import Tracing

/// `larder serve`: the service. Its options are the settings' declarations
/// (`ServeSettings.declarations`), each by its property's name.
///
/// ArgumentParser reads a command's options from the property wrappers of its stored
/// properties, so they cannot be made from the table at run time; nor can swift-configuration's
/// command-line provider stand in: it has no `--help`, no usage errors, and Larder's other
/// commands parse with ArgumentParser. So each property below names its declaration, takes
/// its help from it, and is read back by name (`givenFlags`); a test holds `serve --help` and
/// the table to the same settings.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the service (the default command). Every option can also be set by its LARDER_* variable.")

    @Option(help: .setting("host")) var host: String?
    @Option(help: .setting("port")) var port: String?
    @Option(help: .setting("cache.dir")) var cacheDir: String?
    @Option(help: .setting("memory.limit")) var memoryLimit: String?
    @Option(help: .setting("disk.limit")) var diskLimit: String?
    @Option(help: .setting("max.request.body")) var maxRequestBody: String?
    @Option(help: .setting("max.object.size")) var maxObjectSize: String?
    @Option(help: .setting("weather.url")) var weatherUrl: String?
    @Option(help: .setting("balance.url")) var balanceUrl: String?
    @Option(help: .setting("weather.ttl")) var weatherTtl: String?
    @Option(help: .setting("balance.ttl")) var balanceTtl: String?
    @Option(help: .setting("stale.while.revalidate")) var staleWhileRevalidate: String?
    @Option(help: .setting("stale.if.error")) var staleIfError: String?
    @Option(help: .setting("upstream.timeout")) var upstreamTimeout: String?
    @Option(help: .setting("upstream.concurrency")) var upstreamConcurrency: String?
    @Option(help: .setting("event.loops")) var eventLoops: String?
    @Option(help: .setting("unused.connections.per.client")) var unusedConnectionsPerClient: String?
    @Option(help: .setting("upstream.backoff")) var upstreamBackoff: String?
    @Option(help: .setting("refresh.min.interval")) var refreshMinInterval: String?
    @Option(help: .setting("ca.file")) var caFile: String?
    @Option(help: .setting("coordinate.precision")) var coordinatePrecision: String?
    @Option(help: .setting("log.level")) var logLevel: String?
    @Option(help: .setting("log.format")) var logFormat: String?
    @Option(help: .setting("tracing.endpoint")) var tracingEndpoint: String?
    @Option(help: .setting("tracing.sample.ratio")) var tracingSampleRatio: String?
    @Option(help: .setting("routes")) var route: [String] = []
    @Option(help: .setting("weather.headers")) var weatherHeader: [String] = []
    @Option(help: .setting("balance.headers")) var balanceHeader: [String] = []
    @Option(help: .setting("admin.port")) var adminPort: String?
    @Option(help: .setting("admin.host")) var adminHost: String?
    @Option(help: .setting("admin.token.file")) var adminTokenFile: String?
    @Option(help: .setting("redis.url")) var redisUrl: String?
    @Option(help: .setting("redis.timeout")) var redisTimeout: String?
    @Option(help: .setting("redis.prefix")) var redisPrefix: String?
    @Flag(help: .setting("demo")) var demo = false
    @Option(help: .setting("built.in.routes")) var builtInRoutes: String?
    @Option(help: "Configuration file, YAML or JSON, with any of these settings under their names (cache-dir: …) and pass-through routes; flags and LARDER_* variables win over it (LARDER_CONFIG).") var config: String?

    /// What was given on the command line, by setting key (`cache.dir`): each property read by
    /// its declaration's name; a list's items joined as its variable joins them.
    var givenFlags: [String: String] {
        let byProperty = Dictionary(uniqueKeysWithValues: ServeSettings.declarations.map { ("_" + $0.propertyName, $0) })
        var flags: [String: String] = [:]
        for child in Mirror(reflecting: self).children {
            guard let label = child.label, let declaration = byProperty[label] else { continue }
            switch (child.value, declaration.shape) {
            case (let option as Option<String?>, _):
                flags[declaration.key] = option.wrappedValue
            case (let items as Option<[String]>, .list(let separator)) where !items.wrappedValue.isEmpty:
                flags[declaration.key] = items.wrappedValue.joined(separator: separator)
            case (let flag as Flag<Bool>, _) where flag.wrappedValue:
                flags[declaration.key] = "true"
            default:
                break
            }
        }
        return flags
    }

    func run() async throws {
        let given = givenFlags
        let environment = ProcessInfo.processInfo.environment
        var file: ConfigFile?
        if let path = config ?? environment["LARDER_CONFIG"] { file = try await ConfigFile.load(path: path) }
        var settings = try ServeSettings.resolve(flags: given, environment: environment, file: file)
        LogOutput.bootstrap(level: ServeSettings.logLevel(named: settings.logLevel) ?? .info,
                            format: settings.logFormat == .json ? .json : .text)
        // Every series made through swift-metrics, Larder's and any library's, goes to the
        // registry `/metrics` writes out.
        let exposition = MetricsExposition()
        MetricsSystem.bootstrap(exposition.factory)
        let tracing = try TracingExport.resolve(settings: settings, environment: environment)
        let drops = TraceExportDrops(logger: Logger(label: "larder"))
        let exporter = try tracing.map { try Self.exporter($0, drops: drops) }
        let simulator = settings.demo ? try DemoUpstreams.start(for: &settings, logger: Logger(label: "larder")) : nil
        do {
            // A reload reads the same file (if any), environment and flags again.
            var readSettings: (@Sendable () async throws(ConfigurationError) -> ServeSettings)?
            let path = config ?? environment["LARDER_CONFIG"]
            if let path {
                readSettings = { () async throws(ConfigurationError) -> ServeSettings in
                    let file = try await ConfigFile.load(path: path)
                    return try ServeSettings.resolve(flags: given, environment: environment, file: file)
                }
            }
            let service = LarderService(settings: settings, readSettings: readSettings, watchedFile: path, tracer: exporter?.tracer,
                                        exposition: exposition)
            if let tracing {
                drops.bind()
                Logger(label: "larder").info("tracing on: spans go over OTLP/HTTP", metadata: tracing.summary)
            }
            var first: [any Service] = [StopStep { await LogOutput.stopWriter() }]
            if let simulator { first.append(StopStep { await simulator.shutdown() }) }
            if let exporter { first.append(exporter.service) }
            try await service.runUntilSignalled(first: first)
        } catch {
            // A start that failed before the group ran (its shutdown may run twice: it is idempotent).
            await simulator?.shutdown()
            throw error
        }
    }
}

extension Serve {
    /// The trace exporter; what swift-otel refuses (a certificate file not found, say) stops the start.
    static func exporter(_ tracing: TracingExport, drops: TraceExportDrops) throws -> (tracer: any Tracer, service: any Service) {
        do {
            return try TraceExporter.make(tracing, drops: drops)
        } catch {
            throw ConfigurationError("tracing cannot start: \(error)")
        }
    }
}

extension ArgumentHelp {
    /// A setting's `--help` text and value name, from its declaration.
    static func setting(_ key: String) -> ArgumentHelp {
        guard let declaration = ServeSettings.declarations.first(where: { $0.key == key }) else {
            preconditionFailure("no setting is declared as \(key)")
        }
        return ArgumentHelp(declaration.helpText, valueName: declaration.valueName)
    }
}
