import HTTPCore
public import Caching
import Foundation
public import HTTPServer
public import Logging
public import ServiceLifecycle
import UnixSignals
import Upstream
import Admin
import Observability
import AccessLogging
public import ServiceMetrics
import RedisTier
import Routes
public import Settings
public import Tracing
import UpstreamPolicy

/// The Larder service: caches in front of the upstream APIs, its routes on an `HTTPServer`,
/// run under swift-service-lifecycle so SIGTERM and SIGINT drain in-flight requests before
/// the process exits. With `--demo`, the upstream simulator runs in the same process.
public final class LarderService: Service, @unchecked Sendable {
    public private(set) var settings: ServeSettings
    let logger: Logger
    private let accessLogger: Logger
    public private(set) var server: HTTPServer?
    /// The admin listener (`--admin-port`), when configured.
    public private(set) var adminServer: HTTPServer?
    private var client: UpstreamClient?
    private var redis: SharedRedis?
    public let metrics: LarderMetrics
    /// The backend `metrics` emits into, which `/metrics` writes out.
    private let exposition: MetricsExposition
    private let clock: any CacheClock
    /// The routes serving now, swapped whole by a reload.
    let routes = CurrentRoutes()
    /// Reads the configuration again (file, environment, flags) for a reload; nil when no
    /// file was given.
    let readSettings: (@Sendable () async throws(ConfigurationError) -> ServeSettings)?
    /// The configuration file, reloaded when it changes as on SIGHUP (`ConfigFileWatch`).
    let watchedFile: String?
    /// Where each request's spans go; nil when tracing is off. Passed in, never read from
    /// `InstrumentationSystem`: with tracing off a request pays one nil check, no task-local.
    let tracer: (any Tracer)?

    /// `clock` is where freshness and Age read the time; tests pass a clock they move.
    /// `readSettings` reads the configuration again for a reload (`reload()`), which also
    /// happens when `watchedFile` changes. `tracer` records a span per request (and its
    /// tiers, upstream call and parts); nil, the default, serves untraced. `exposition`: the
    /// metrics backend, the one the executable bootstrapped; by default one of its own.
    public init(settings: ServeSettings, logger: Logger = Logger(label: "larder"), clock: any CacheClock = SystemClock(),
                readSettings: (@Sendable () async throws(ConfigurationError) -> ServeSettings)? = nil,
                watchedFile: String? = nil, tracer: (any Tracer)? = nil, exposition: MetricsExposition = MetricsExposition()) {
        self.settings = settings
        self.tracer = tracer
        self.readSettings = readSettings
        self.watchedFile = watchedFile
        self.logger = logger
        var access = logger
        access[metadataKey: "log"] = "access"
        self.accessLogger = access
        self.clock = clock
        self.exposition = exposition
        metrics = LarderMetrics(memoryLimit: settings.memoryLimit, diskLimit: settings.diskLimit, sharedTier: settings.redisURL != nil,
                                version: Version.current, factory: exposition.factory)
    }

    /// Opens the cache and binds the listeners. A failure here (cache dir not writable, port
    /// in use) is a start failure; `stop()` then closes what was opened before it.
    public func start() throws {
        let settings = self.settings
        let memory = MemoryTier(budget: settings.memoryLimit)
        let disk = try openDisk()
        let client = UpstreamClient(configuration: .init(caFile: settings.caFile))
        self.client = client
        let redis = settings.redisURL.map { SharedRedis(settings: settings, url: $0, memory: memory, disk: disk, logger: logger) }
        self.redis = redis
        let shared = redis?.tier
        let health = Health(metrics: metrics, logger: logger, clock: clock)
        let routes = self.routes
        // Each request reads the routes serving now; a reload swaps them between requests.
        @Sendable func current() -> ServingRoutes { routes.now! }

        var router = Router()
        for (index, path) in ServingRoutes.builtInPaths.enumerated() where settings.servedPaths.contains(path) {
            router.get(path) { request in current().handlers[index](request) }
        }
        // The aggregates at start have a path of their own (and a request series); one a
        // reload adds is found among the unrouted paths, and one a reload removes leaves its
        // path to them.
        for path in settings.servedAggregates.map(\.path) {
            router.get(path) { request in
                let routes = current()
                guard let served = routes.aggregates[path] else { return routes.serveUnrouted(request) }
                return served.handle(request)
            }
        }
        router.get("/livez") { _ in .now(Health.livez) }
        let readiness: HTTPHandler = { _ in .now(health.readiness(disk: disk, client: client, redis: redis, upstreams: current().upstreams)) }
        router.get("/readyz", readiness)
        router.get("/healthz", readiness)
        let metrics = self.metrics, exposition = self.exposition
        // The server is created below; the metrics handler reads its connection count through this box.
        let serverBox = ServerBox()
        router.get("/metrics") { _ in
            metrics.update(memory: memory, disk: disk, shared: redis.map(SharedTierReading.init), openConnections: serverBox.server?.openConnections ?? 0)
            return .now(HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "text/plain; version=0.0.4; charset=utf-8"),
                                                                        ("Cache-Control", "no-store")]),
                                     body: exposition.render(hitPath: metrics.renderHitPath())))
        }
        router.get("/openapi.yaml") { _ in
            .now(HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "application/yaml"), ("Cache-Control", "no-store")]),
                              body: current().openAPI))
        }
        router.fallback = { request in current().serveUnrouted(request) }
        precondition(router.paths == settings.servedPaths.sorted(), "servedPaths must list the router's paths")

        // Pass-through routes and aggregates a reload adds declare their stale series as they come.
        let cached = router.paths.filter(ServingRoutes.builtInPaths.contains) + settings.servedAggregates.map(\.path)
        let series = metrics.requestSeries(routes: router.paths, cached: cached, removable: settings.servedAggregates.map(\.path))
        let accessLog = AccessLog(logger: accessLogger, series: series, unroutedSeries: { current().labels(unrouted: $0) })
        // Made before a request can come: the router's handlers read them only per request.
        let first = ServingRoutes(settings: settings, ServingRoutes.Shared(
            memory: memory, disk: disk, shared: shared, client: client, health: health, metrics: metrics, clock: clock, logger: logger,
            series: series))
        routes.replace(with: first)
        var configuration = settings.serverConfiguration
        // Request bodies spooled beside the cache count against its budget, as answers being fetched do.
        configuration.requestSpoolRoom = disk.spoolRoom
        configuration.refusals = { accessLog.refused(status: $0, detail: $1, client: $2) }
        // Read per request with a body, from the routes serving now: a reload applies at once.
        configuration.bodyLimit = { path in current().requestBodyLimit(path) }
        let server = HTTPServer(configuration: configuration, logger: logger, handler: accessLog.wrap(router, tracer: tracer, untraced: Self.untracedPaths))
        serverBox.server = server
        // The admin listener binds first, so a port in use stops the start before the public port serves.
        if let adminPort = settings.adminPort, let token = settings.adminToken {
            let api = AdminAPI(token: BearerToken(token), targets: { current().adminTargets },
                               purger: CachePurger(memory: memory, disk: disk, shared: shared), logger: logger,
                               reload: { [weak self] in await self?.reload() ?? .unavailable("the service is stopping") },
                               readiness: { health.readiness(disk: disk, client: client, redis: redis, upstreams: current().upstreams, detailed: true) })
            var configuration = HTTPServerConfiguration(host: settings.adminHost, port: adminPort)
            configuration.eventLoops = 1
            // An operator's request now and then: no caller waits behind it for a core.
            configuration.idleStrategy = .sleep
            let admin = HTTPServer(configuration: configuration, logger: logger, handler: api.handler)
            do {
                try admin.start()
            } catch {
                throw ConfigurationError("cannot listen on \(settings.adminHost):\(adminPort) (admin): \(error)")
            }
            adminServer = admin
        }
        do {
            try server.start()
        } catch {
            throw ConfigurationError("cannot listen on \(settings.host):\(settings.port): \(error)")
        }
        self.server = server
        // Whatever the log level: with `--port 0` this line is the only way to learn the port.
        var announcer = logger
        announcer.logLevel = min(logger.logLevel, .info)
        announcer.info("listening on http://\(Self.hostInURL(settings.host)):\(server.port ?? settings.port)")
        if let admin = adminServer {
            announcer.info("admin listening on http://\(Self.hostInURL(settings.adminHost)):\(admin.port ?? 0)")
        }
        logger.info("settings in use", metadata: settings.summary)
        first.describe(to: logger)
    }


    private static func hostInURL(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }

    /// Requests that may wait for a slot to one upstream; more are refused (503, saturated) at once.
    static let upstreamQueueLimit = 1024

    /// The probes and the scrape: not traced, as their traces would outnumber the requests'.
    static let untracedPaths = ["/livez", "/readyz", "/healthz", "/metrics"]

    private func openDisk() throws -> DiskTier {
        let disk: DiskTier
        do {
            // The write queue's bytes (16 MiB at most) come on top of the memory tier's.
            let logger = logger
            disk = try DiskTier(directory: settings.cacheDirectory, budget: settings.diskLimit,
                                report: { logger.warning("disk: \($0)") }, inform: { logger.info("disk: \($0)") })
        } catch {
            throw ConfigurationError("cannot use cache directory \(settings.cacheDirectory): \(Self.directoryProblem(settings.cacheDirectory))")
        }
        guard disk.isWritable else { throw ConfigurationError("cache directory \(settings.cacheDirectory) is not writable") }
        return disk
    }

    /// Why a directory cannot be made or used, in words (Foundation's error says
    /// "NSCocoaErrorDomain error 512"): the path or a parent is a file, or a parent is not
    /// writable.
    static func directoryProblem(_ path: String) -> String {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            if !isDirectory.boolValue { return "it is a file, not a directory" }
            return FileManager.default.isWritableFile(atPath: path) ? "its tmp folder cannot be made" : "it is not writable"
        }
        var ancestor = URL(fileURLWithPath: path).deletingLastPathComponent()
        while ancestor.path != "/", !FileManager.default.fileExists(atPath: ancestor.path, isDirectory: &isDirectory) {
            ancestor = ancestor.deletingLastPathComponent()
        }
        if !isDirectory.boolValue { return "\(ancestor.path) is a file, not a directory" }
        if !FileManager.default.isWritableFile(atPath: ancestor.path) { return "it cannot be created: \(ancestor.path) is not writable" }
        return "it cannot be created"
    }

    /// Returns when every disk write started so far has finished (tests, `larder-bench
    /// disk-hit-path`, and a clean stop).
    public func waitForDiskWrites() async {
        // One disk tier under every generation of routes: its writes are all of them.
        await routes.now?.base.disk.waitForWrites()
    }

    private var startsInRun = false

    /// Serves until a graceful shutdown is requested, then drains.
    public func run() async throws {
        if startsInRun {
            do {
                try start()
            } catch {
                // The admin listener, the disk index load, the client's and Redis's threads
                // that started before the failure end, and are waited for, before the error
                // ends the process.
                await closeAll()
                throw error
            }
        }
        try? await gracefulShutdown()
        await stop()
    }

    /// Drains connections, then finishes disk writes and stops the upstream client.
    public func stop() async {
        logger.info("stopping: draining connections")
        await closeAll()
        logger.info("stopped")
    }

    private func closeAll() async {
        await server?.shutdown()
        await adminServer?.shutdown()
        await waitForDiskWrites()
        await routes.now?.base.disk.stopLoading()
        await client?.shutdown()
        await redis?.shutdown()
    }

    /// Starts the service and runs it until SIGTERM or SIGINT. Binding happens inside the
    /// service group, after its signal handlers are in place, so a SIGTERM that arrives
    /// right after the listening line still drains instead of killing the process. SIGHUP,
    /// or a change to the configuration file, reloads it (`reload()`) and never stops the
    /// process; those triggers are a service of the group too (`ReloadTriggers`), listed
    /// after this one so a stop ends them, and a reload under way, before the drain.
    /// The `first` services (the log writer, the trace exporter when tracing is on) run ahead
    /// of this one in the group, so they stop after it, last first: the lines and the spans
    /// of the requests the drain finishes are written.
    public func runUntilSignalled(first: [any Service] = []) async throws {
        startsInRun = true
        let triggers = ReloadTriggers(hangups: await UnixSignalsSequence(trapping: .sighup),
                                      watch: watchedFile.map { ConfigFileWatch(path: $0) },
                                      reload: { [weak self] in _ = await self?.reload() })
        let group = ServiceGroup(configuration: .init(
            services: first.map { .init(service: $0) }
                + [.init(service: self), .init(service: triggers, successTerminationBehavior: .ignore)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        try await group.run()
    }
}
