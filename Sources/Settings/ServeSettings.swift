import Configuration
import Foundation
public import HTTPCore
import Bodies
public import HTTPServer
public import Logging
public import RedisVocabulary

/// The settings of `larder serve`, resolved flag over environment over default
/// (swift-configuration) and validated once at start, so a bad value stops the
/// process before it binds anything.
public struct ServeSettings: Sendable, Equatable {
    public var host = "127.0.0.1"
    public var port = 8080
    public var cacheDirectory = ".larder-cache"
    public var memoryLimit = 64 << 20
    public var diskLimit = 1 << 30
    /// The largest request body, on every route (413 past it). A body is held whole in
    /// memory until it has arrived, so this bounds what one connection's upload can take.
    public var maxRequestBody = 1 << 20
    /// The largest answer stored; a larger one is relayed and not stored. At most
    /// `HeldAnswer.largestSpooled`, the most Larder takes of one answer (past 8 MiB, a
    /// pass-through answer is spooled to a file, stored on disk only and sent from there).
    public var maxObjectSize = HeldAnswer.largestSpooled
    public var weatherURL = "https://api.open-meteo.com/v1/forecast"
    public var balanceURL: String?
    public var weatherTTL: Duration = .seconds(600)
    public var balanceTTL: Duration = .seconds(60)
    public var staleWhileRevalidate: Duration = .seconds(30)
    public var staleIfError: Duration = .seconds(86_400)
    public var upstreamTimeout: Duration = .seconds(5)
    /// Requests in flight to one upstream at most (each built-in upstream, each pass-through origin).
    public var upstreamConcurrency = 16
    /// Event loops serving the public port, one thread each; nil = one per CPU. Fewer leave
    /// cores to what shares the machine (a sidecar's application, a load generator).
    public var eventLoops: Int?
    /// Connections from one client address that have sent nothing yet; past it, that
    /// address's next connection is closed at once (a flood of unused connections from one
    /// address cannot take every slot).
    public var unusedConnectionsPerClient = 64
    /// The first pause of an upstream that fails without naming one (doubled up to 60 s while failures continue).
    public var upstreamBackoff: Duration = .seconds(5)
    /// At most one client-forced refresh per key of a built-in route in this interval; 0 = no limit.
    public var refreshMinInterval: Duration = .seconds(5)
    /// A PEM file of the CAs that https upstreams are verified against; nil for the system's.
    public var caFile: String?
    /// Fields sent to the weather and balance upstreams on every request (credentials);
    /// values from `@/path` files already read. Never logged.
    public var weatherHeaders = HTTPHeaders()
    public var balanceHeaders = HTTPHeaders()
    public var coordinatePrecision = 2
    public var logLevel = "info"
    public var logFormat = LogFormat.text
    /// The OTLP/HTTP collector traces go to (a base URL, `/v1/traces` added); nil = none
    /// given here, where `OTEL_EXPORTER_OTLP_ENDPOINT` may still give one (`TracingExport`).
    public var tracingEndpoint: String?
    /// The share of requests traced that bring no sampled `traceparent` of their own.
    public var tracingSampleRatio = 1.0
    /// Start the upstream simulator in-process and point unset upstream URLs at it.
    public var demo = false
    /// The built-in routes served (`weather`, `balance`; `/overview` with both); none makes
    /// a gateway only, whose pass-through routes may then take those paths.
    public var builtInRoutes: Set<String> = ["weather", "balance"]
    /// Pass-through routes (`--route PREFIX=ORIGIN`), in the order given.
    public var routes: [RouteMount] = []
    /// The aggregates a configuration file declares, in its order (`servedAggregates` adds `/overview`).
    public var aggregates: [AggregateDeclaration] = []
    /// The admin listener (purge, inspection): off unless a port is given; then the bearer
    /// token, read from `--admin-token-file`, is required. Never logged.
    public var adminPort: Int?
    public var adminHost = "127.0.0.1"
    public var adminToken: String?
    /// The tier every replica shares (`--redis-url`); nil = off. How long any Redis call may
    /// take before the request goes on without it, and the prefix of every key and channel.
    public var redisURL: RedisURL?
    public var redisTimeout: Duration = .milliseconds(100)
    public var redisPrefix = "larder:"
    /// Whether the weather and balance URLs were given (flag or environment), so `--demo` leaves them alone.
    public var weatherURLGiven = false

    public enum LogFormat: String, Sendable, Equatable { case text, json }

    public init() {}

    /// The keys a configuration file may hold (`cache-dir`, `routes`, …).
    public static let fileKeys = Set(declarations.map(\.fileKey))

    /// The paths these settings answer themselves: the operational ones, the built-in
    /// routes that are on, and the aggregates.
    public var servedPaths: [String] {
        var paths = ["/livez", "/readyz", "/healthz", "/metrics", "/openapi.yaml"]
        for route in ["weather", "balance"] where builtInRoutes.contains(route) { paths.append("/" + route) }
        return paths + servedAggregates.map(\.path)
    }

    /// The aggregates served: those declared, and `/overview` (`AggregateDeclaration.overview`)
    /// when both built-in routes are on and no aggregate is declared at its path.
    public var servedAggregates: [AggregateDeclaration] {
        guard builtInRoutes.isSuperset(of: ["weather", "balance"]), !aggregates.contains(where: { $0.path == "/overview" }) else {
            return aggregates
        }
        return [.overview] + aggregates
    }

    static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// A level by name, in any case, with `warn` for `warning` (what most tools call it).
    public static func logLevel(named name: String) -> Logger.Level? {
        let lower = name.lowercased()
        return Logger.Level(rawValue: lower == "warn" ? "warning" : lower)
    }

    /// The settings in use, for the one start-up line: secrets never (header values and the
    /// admin token are left out; passwords and credential parameters in URLs are redacted):
    /// each setting's fields as its declaration shows them, and the aggregates served.
    public var summary: Logger.Metadata {
        var summary: Logger.Metadata = [
            "aggregates": .string(servedAggregates.isEmpty ? "none" : servedAggregates.map(\.path).joined(separator: ",")),
        ]
        for declaration in Self.declarations { summary.merge(declaration.shown(self)) { _, new in new } }
        return summary
    }

    /// The server's part of these settings.
    public var serverConfiguration: HTTPServerConfiguration {
        var configuration = HTTPServerConfiguration(host: host, port: port)
        if let eventLoops { configuration.eventLoops = eventLoops }
        configuration.maxUnusedConnectionsPerClient = unusedConnectionsPerClient
        configuration.maxBodyBytes = maxRequestBody
        configuration.requestSpoolDirectory = cacheDirectory
        return configuration
    }
}

/// A configuration value that cannot be used; its message is the one line printed on stderr.
public struct ConfigurationError: Error, Equatable, CustomStringConvertible {
    /// One line per problem, every one (`check-config` prints them all).
    public let problems: [String]
    public init(_ message: String) { problems = [message] }
    public init(problems: [String]) { self.problems = problems }
    /// The first `shownProblems`, then how many more: what `serve` prints and a reload answers,
    /// so a file of thousands of unknown keys makes one screen, not a log line of megabytes.
    public var shown: [String] {
        problems.count <= Self.shownProblems ? problems
            : problems.prefix(Self.shownProblems) + ["… and \(problems.count - Self.shownProblems) more problems (larder check-config lists them all)"]
    }
    public static let shownProblems = 20
    public var message: String { shown.joined(separator: "\n") }
    public var description: String { message }
}

extension ServeSettings {
    /// The duration syntax of every setting (`80ms`, `10m`), for other commands' options.
    public static func parseDuration(_ text: String) -> Duration? { SettingValues.duration(text) }
}
