import Admin
import Caching
import HTTPCore
import HTTPServer
import Logging
import Observability
import AccessLogging
import ServiceMetrics
import RedisTier
import Routes
import Locking
import Synchronization
import Settings
import Upstream
import UpstreamPolicy

/// The routes of one configuration: the built-in routes' caches, the pass-through routes,
/// and the upstreams readiness checks. A reload builds a new one over the same tiers and
/// swaps it in whole: a request finishes on the routes it started with, the next one takes
/// the new ones, and the stored entries stay where they are.
final class ServingRoutes: Sendable {
    let settings: ServeSettings
    let base: Shared
    let builtIns: [LarderRoutes.Mounted]
    let larder: LarderRoutes
    let passThrough: PassThroughRoutes?
    /// The aggregates, by path (`/overview` among them when both built-in routes are on).
    let aggregates: [String: Aggregate]
    let upstreams: [Health.Upstream]
    /// The request series of the aggregates the router has no path for (a reload added
    /// them), by path; empty mostly, so a pass-through request seldom looks here.
    private let aggregateSeries: [String: AccessLog.Labels]
    /// `/openapi.yaml` for these routes: the aggregates are part of it.
    let openAPI: [UInt8]
    /// The built-in routes' paths, in this order in every generation (`builtInPaths`), and
    /// their handlers by the same position: a request finds its handler by index, not by
    /// hashing its path again.
    static let builtInPaths = ["/balance", "/weather"]
    let handlers: [HTTPHandler]

    var caches: [Cache] { builtIns.compactMap(\.cache) + (passThrough?.routes.map(\.cache) ?? []) }
    var adminTargets: AdminTargets { AdminTargets(builtIns: builtIns, passThrough: passThrough, aggregates: aggregates) }

    /// What every generation of routes shares: the tiers, the upstream client, the clock.
    struct Shared: Sendable {
        let memory: MemoryTier
        let disk: DiskTier
        let shared: SharedTier?
        let client: UpstreamClient
        let health: Health
        let metrics: LarderMetrics
        let clock: any CacheClock
        let logger: Logger
        /// The request series, where each configured route finds its label once.
        let series: RequestSeries
    }

    init(settings: ServeSettings, _ base: Shared) {
        self.settings = settings
        self.base = base
        var upstreams: [Health.Upstream] = []
        var originNames: Set<String> = []
        // Each configured route's and aggregate's label, the ones these settings no longer have let go.
        let routeLabels = base.series.configure(settings.routes.map(\.prefix) + settings.servedAggregates.map(\.path))
        // Every built-in route is one `Cache` over the shared tiers, told apart by its policy and render hook.
        let builtIns = [BuiltInRoute.weather(settings), BuiltInRoute.balance(settings)].map { route in
            guard route.locate != nil else { return LarderRoutes.Mounted(route: route, cache: nil) }
            var fetcher = Self.fetcher(settings, base, route.name, forwarding: false, credentials: route.credentials,
                                       isAnswer: { $0 == 200 || $0 == 304 }, pausesOnAnswers: true)
            fetcher.url = { [upstreamURL = route.upstreamURL] in upstreamURL($0.resource) }
            let origin = route.name == "weather" ? settings.weatherURL : settings.balanceURL
            upstreams.append(Health.Upstream(check: "upstream:\(route.name)", name: route.name, backoff: fetcher.backoff,
                                             origin: origin.map(RedactedURL.text)))
            var policy = route.policy
            policy.maxObjectSize = settings.maxObjectSize
            return LarderRoutes.Mounted(route: route, cache: Cache(
                route: route.name, policy: policy, memory: base.memory, disk: base.disk, shared: base.shared, fetcher: fetcher,
                clock: base.clock, reuse: route.reuse(settings: settings), render: route.render(settings: settings, logger: base.logger)))
        }
        passThrough = settings.routes.isEmpty ? nil : PassThroughRoutes(routes: settings.routes.map { mount in
            // An origin's 429 or 503 is relayed with its own Retry-After; only an unreachable origin is paused.
            let originName = OriginName.of(mount.origin)
            originNames.insert(originName)
            var fetcher = Self.fetcher(settings, base, originName, forwarding: true, credentials: [],
                                       isAnswer: { $0 < 500 }, pausesOnAnswers: false,
                                       timeout: mount.caching.timeout, concurrency: mount.caching.concurrency)
            fetcher.overrides = mount.caching.overrides
            // An answer past what Larder holds in memory goes on into an unnamed file beside the cache.
            fetcher.spoolDirectory = settings.cacheDirectory
            fetcher.spoolRoom = base.disk.spoolRoom
            var policy = CachePolicy.sharedCache
            policy.defaultLifetimes = mount.caching.lifetimes.mapValues(\.seconds)
            policy.staleWhileRevalidate = mount.caching.staleWhileRevalidate.seconds
            policy.staleIfError = mount.caching.staleIfError.seconds
            policy.maxObjectSize = mount.caching.maxObjectSize ?? settings.maxObjectSize
            fetcher.storesUpTo = policy.maxObjectSize
            policy.clientRefresh = mount.caching.clientRefresh
            // Named by its prefix: the public port never shows where a route's origin is.
            upstreams.append(Health.Upstream(check: "route:\(mount.prefix)", name: nil, backoff: fetcher.backoff,
                                             origin: RedactedURL.text(mount.origin)))
            return PassThroughRoutes.Route(mount: mount, cache: Cache(
                route: mount.origin, policy: policy, memory: base.memory, disk: base.disk, shared: base.shared, fetcher: fetcher,
                clock: base.clock, render: { _, entry in RenderedResponse(relaying: entry) }),
                labels: AccessLog.Labels(series: routeLabels[mount.prefix] ?? .passThrough, origin: originName))
        }, metrics: base.metrics)
        self.builtIns = builtIns
        self.upstreams = upstreams
        larder = LarderRoutes(metrics: base.metrics)
        let larder = larder
        handlers = Self.builtInPaths.map { path in larder.handler(builtIns.first { $0.route.path == path }!) }
        let passThrough = passThrough
        aggregates = Dictionary(settings.servedAggregates.compactMap { declared in
            Aggregate(declared, settings: settings, builtIns: builtIns, passThrough: passThrough, metrics: base.metrics).map { (declared.path, $0) }
        }, uniquingKeysWith: { first, _ in first })
        aggregateSeries = Dictionary(uniqueKeysWithValues: aggregates.keys.filter { !base.series.routes.contains($0) }
            .map { ($0, AccessLog.Labels(series: routeLabels[$0] ?? .passThrough)) })
        // Pass-through origins are counted by `scheme://host:port`: bounded by the configuration.
        let upstreamNames = Set(upstreams.compactMap(\.name)).union(originNames)
        let served = aggregates
        base.metrics.configure(upstreams: upstreamNames, aggregateParts: settings.servedAggregates.filter { served[$0.path] != nil }
            .flatMap { declared in declared.parts.map { (declared.path, $0.name) } })
        base.health.keepOutcomes(of: upstreamNames)
        openAPI = Array(OpenAPIDocument.yaml(builtIn: builtIns.filter { settings.servedPaths.contains($0.route.path) }.map(\.route.path),
                                             aggregates: Array(aggregates.values)).utf8)
    }

    /// The largest body a request to `path` may carry: the limit of the pass-through route
    /// that serves it (its own, else `ForwardingRules.defaultMaxRequestBody`), else the
    /// top-level `max-request-body`.
    func requestBodyLimit(_ path: Substring) -> Int {
        guard !settings.servedPaths.contains(String(path)), let route = passThrough?.routes.first(where: { $0.mount.covers(path) }) else {
            return settings.maxRequestBody
        }
        return route.mount.rules.maxRequestBody ?? ForwardingRules.defaultMaxRequestBody
    }

    /// The labels of a path no path of the router's own matched: an aggregate's, else the
    /// covering pass-through route's; nil for neither.
    func labels(unrouted path: Substring) -> AccessLog.Labels? {
        if !aggregateSeries.isEmpty, let aggregate = aggregateSeries[String(path)] { return aggregate }
        return passThrough?.labels(covering: path)
    }

    /// A request no path of the router's own matched: an aggregate (one a reload added),
    /// else a pass-through route, else 404.
    func serveUnrouted(_ request: HTTPRequest) -> HTTPHandlerResult {
        if let aggregate = aggregates[String(request.path)] { return Self.serve(aggregate, request) }
        guard let passThrough else { return .now(ProblemDetails(status: 404, detail: "No resource at \(request.path).").response()) }
        return passThrough.handler(request)
    }

    /// An aggregate answers GET and HEAD, as every path of the router does.
    static func serve(_ aggregate: Aggregate, _ request: HTTPRequest) -> HTTPHandlerResult {
        guard request.method == .get || request.method == .head else { return .now(Router.methodNotAllowed(request, allowing: [.get])) }
        return aggregate.handle(request)
    }

    private static func fetcher(_ settings: ServeSettings, _ base: Shared, _ name: String, forwarding: Bool, credentials: HTTPHeaders,
                                isAnswer: @escaping @Sendable (Int) -> Bool, pausesOnAnswers: Bool,
                                timeout: Duration? = nil, concurrency: Int? = nil) -> UpstreamFetcher {
        var backoff = UpstreamBackoff.Rules(pause: settings.upstreamBackoff.seconds)
        backoff.pausesOnAnswers = pausesOnAnswers
        return UpstreamFetcher(name: name, client: base.client, timeout: timeout ?? settings.upstreamTimeout, forwarding: forwarding,
                               credentials: credentials, isAnswer: isAnswer, observer: base.health, clock: base.clock,
                               concurrency: ConcurrencyLimit(limit: concurrency ?? settings.upstreamConcurrency,
                                                             queueLimit: LarderService.upstreamQueueLimit),
                               backoff: UpstreamBackoff(rules: backoff))
    }

    /// The lines a start or a reload logs about these routes (credentials by name only).
    func describe(to logger: Logger) {
        for mount in settings.routes { logger.info("pass-through route \(mount.prefix) -> \(mount.description.dropFirst(mount.prefix.count + 1))") }
        for aggregate in settings.servedAggregates {
            logger.info("aggregate \(aggregate.path) of \(aggregate.parts.map { "\($0.name) \($0.target)" }.joined(separator: ", "))")
        }
        for route in builtIns where !route.route.credentials.isEmpty {
            logger.info("\(route.route.name) upstream headers: \(CredentialHeaders.redacted(route.route.credentials))")
        }
    }
}

/// The routes serving now: read by every request, replaced whole by a reload. Routes a
/// reload replaced are kept by nothing here: they go once their last request has ended.
/// (Keeping their caches for a stop to wait on grew memory by 5 KB a reload, never given
/// back; every generation writes through the one disk tier, which a stop waits on.)
final class CurrentRoutes: Sendable {
    private let routes = Locked<ServingRoutes?>(nil)
    /// Held while a reload makes its routes and swaps them in: making them gives each
    /// configured route its series and lets go of the rest, so two reloads at once (SIGHUP,
    /// the admin API, a changed file) must swap in the routes of the last one made.
    private let making = Locked(())

    var now: ServingRoutes? { routes.withLock { $0 } }

    func replace(with next: ServingRoutes) {
        routes.withLock { $0 = next }
    }

    /// Swaps in the routes `make` makes from those serving now, and answers them with what
    /// `make` said; nil before the first routes serve.
    func remake<Said: Sendable>(_ make: (ServingRoutes) -> (ServingRoutes, Said)) -> (ServingRoutes, Said)? {
        making.withLock { _ in
            guard let current = now else { return nil }
            let (next, said) = make(current)
            replace(with: next)
            return (next, said)
        }
    }
}
