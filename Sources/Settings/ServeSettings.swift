import Configuration
import Foundation
import HTTPCore
import HTTPServer
import Logging
import Redis

/// The settings of `larder serve`, resolved flag over environment over default
/// (swift-configuration) and validated once at start, so a bad value stops the
/// process before it binds anything.
public struct ServeSettings: Sendable, Equatable {
    public var host = "127.0.0.1"
    public var port = 8080
    public var cacheDirectory = ".larder-cache"
    public var memoryLimit = 64 << 20
    public var diskLimit = 1 << 30
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
    /// Start the upstream simulator in-process and point unset upstream URLs at it.
    public var demo = false
    /// Pass-through routes (`--route PREFIX=ORIGIN`), in the order given.
    public var routes: [RouteMount] = []
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

    /// One row of the settings table: key, environment variable and flag are derived from it.
    struct Option {
        let key: String
        /// Lists (`routes`, `*.headers`) are plural; their flag is given once per item, so it is singular.
        var flag: String {
            let flag = "--" + key.replacingOccurrences(of: ".", with: "-")
            return Self.lists.contains(key) ? String(flag.dropLast()) : flag
        }
        static let lists: Set<String> = ["routes", "weather.headers", "balance.headers"]
        var variable: String { "LARDER_" + key.uppercased().replacingOccurrences(of: ".", with: "_").replacingOccurrences(of: "-", with: "_") }
    }

    /// `flags` maps configuration keys (`host`, `cache-dir`, …) to what was given on the
    /// command line; `environment` is read as `LARDER_HOST`, `LARDER_CACHE_DIR`, ….
    public static func resolve(flags: [String: String], environment: [String: String]) throws(ConfigurationError) -> ServeSettings {
        var values: [AbsoluteConfigKey: ConfigValue] = [:]
        for (key, value) in flags {
            values[AbsoluteConfigKey(["larder"] + key.split(separator: ".").map(String.init))] = ConfigValue(.string(value), isSecret: key.hasSuffix(".headers") || key == "redis.url")
        }
        // swift-configuration maps the key larder.cache.dir to LARDER_CACHE_DIR.
        let reader = ConfigReader(providers: [
            InMemoryProvider(name: "flags", values: values),
            EnvironmentVariablesProvider(environmentVariables: environment),
        ])
        func string(_ key: String) -> String? {
            reader.string(forKey: ConfigKey(["larder"] + key.split(separator: ".").map(String.init)))
        }
        func read<T>(_ key: String, _ what: String, _ parse: (String) -> T?) throws(ConfigurationError) -> T? {
            guard let text = string(key) else { return nil }
            guard let value = parse(text) else {
                let option = Option(key: key)
                throw ConfigurationError("\(option.flag) (\(option.variable)) must be \(what), got '\(text)'")
            }
            return value
        }

        var s = ServeSettings()
        if let host = try read("host", "a host name or address", { $0.isEmpty ? nil : $0 }) { s.host = host }
        if let port = try read("port", "a whole number from 0 to 65535", { Int($0).flatMap { (0...65535).contains($0) ? $0 : nil } }) { s.port = port }
        if let dir = try read("cache.dir", "a directory path", { $0.isEmpty ? nil : $0 }) { s.cacheDirectory = dir }
        let size = "a size (bytes, or with B, KiB, MiB, GiB)"
        if let v = try read("memory.limit", size, SettingValues.bytes) { s.memoryLimit = v }
        if let v = try read("disk.limit", size, SettingValues.bytes) { s.diskLimit = v }
        let url = "an http:// or https:// URL"
        if let v = try read("weather.url", url, { SettingValues.isHTTPURL($0) ? $0 : nil }) { s.weatherURL = v; s.weatherURLGiven = true }
        if let v = try read("balance.url", url, { SettingValues.isHTTPURL($0) ? $0 : nil }) { s.balanceURL = v }
        let duration = "a duration (seconds, or with us, ms, s, m, h)"
        if let v = try read("weather.ttl", duration, SettingValues.duration) { s.weatherTTL = v }
        if let v = try read("balance.ttl", duration, SettingValues.duration) { s.balanceTTL = v }
        if let v = try read("stale.while.revalidate", duration, SettingValues.duration) { s.staleWhileRevalidate = v }
        if let v = try read("stale.if.error", duration, SettingValues.duration) { s.staleIfError = v }
        if let v = try read("upstream.timeout", "a duration above zero", { SettingValues.duration($0).flatMap { $0 > .zero ? $0 : nil } }) {
            s.upstreamTimeout = v
        }
        if let v = try read("upstream.concurrency", "a whole number from 1 to 1024", { Int($0).flatMap { (1...1024).contains($0) ? $0 : nil } }) {
            s.upstreamConcurrency = v
        }
        if let v = try read("event.loops", "a whole number from 1 to 256", { Int($0).flatMap { (1...256).contains($0) ? $0 : nil } }) {
            s.eventLoops = v
        }
        if let v = try read("upstream.backoff", "a duration from 1s to 60s", {
            SettingValues.duration($0).flatMap { $0 >= .seconds(1) && $0 <= .seconds(60) ? $0 : nil }
        }) { s.upstreamBackoff = v }
        if let v = try read("refresh.min.interval", duration, SettingValues.duration) { s.refreshMinInterval = v }
        if let v = try read("ca.file", "a readable PEM file of CA certificates", SettingValues.readableFile) { s.caFile = v }
        if let v = try read("coordinate.precision", "a whole number from 0 to 6", { Int($0).flatMap { (0...6).contains($0) ? $0 : nil } }) {
            s.coordinatePrecision = v
        }
        if let v = try read("log.level", "one of \(logLevels.joined(separator: ", ")) (or warn)", { logLevel(named: $0).map(\.rawValue) }) {
            s.logLevel = v
        }
        if let v = try read("log.format", "text or json", LogFormat.init(rawValue:)) { s.logFormat = v }
        if let v = try read("routes", "a comma list of PREFIX=ORIGIN (a path starting with / and an http:// or https:// URL)",
                            RouteMount.parseList) { s.routes = v }
        if let problem = RouteMount.unreachable(s.routes, builtIn: builtInPaths).first {
            throw ConfigurationError("--route (LARDER_ROUTES) \(problem): a route that can never match is refused")
        }
        for (key, keep) in [("weather.headers", \ServeSettings.weatherHeaders), ("balance.headers", \ServeSettings.balanceHeaders)] {
            // Not through `read`: its error repeats the value given, and these values are secrets.
            guard let text = string(key) else { continue }
            switch CredentialHeaders.parseList(text) {
            case .success(let fields): s[keyPath: keep] = fields
            case .failure(let problem):
                let option = Option(key: key)
                throw ConfigurationError("\(option.flag) (\(option.variable)) must be 'Name: value' or 'Name: @/path': \(problem.reason)")
            }
        }
        if let v = try read("admin.port", "a whole number from 0 to 65535", { Int($0).flatMap { (0...65535).contains($0) ? $0 : nil } }) {
            s.adminPort = v
        }
        if let v = try read("admin.host", "a host name or address", { $0.isEmpty ? nil : $0 }) { s.adminHost = v }
        if let v = try read("admin.token.file", "a readable file holding the admin token", SettingValues.readableFile) {
            // Not through `read`'s message: the file's content is a secret.
            guard let token = SettingValues.token(inFile: v) else {
                throw ConfigurationError("--admin-token-file (LARDER_ADMIN_TOKEN_FILE) must hold a token of visible ASCII characters: \(v) does not")
            }
            s.adminToken = token
        }
        if s.adminPort != nil, s.adminToken == nil {
            throw ConfigurationError("--admin-port (LARDER_ADMIN_PORT) needs --admin-token-file (LARDER_ADMIN_TOKEN_FILE): the admin listener never runs without a token")
        }
        if let v = try read("redis.url", "a redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] URL", RedisURL.init) { s.redisURL = v }
        if let v = try read("redis.timeout", "a duration from 1ms to 10s", {
            SettingValues.duration($0).flatMap { $0 >= .milliseconds(1) && $0 <= .seconds(10) ? $0 : nil }
        }) { s.redisTimeout = v }
        if let v = try read("redis.prefix", "1 to 64 visible ASCII characters", {
            (1...64).contains($0.utf8.count) && $0.utf8.allSatisfy { (0x21...0x7E).contains($0) } ? $0 : nil
        }) { s.redisPrefix = v }
        if let v = try read("demo", "true or false", { ["true": true, "1": true, "false": false, "0": false][$0.lowercased()] }) { s.demo = v }
        return s
    }

    /// The paths Larder answers itself, before any pass-through route.
    public static let builtInPaths = ["/weather", "/balance", "/overview", "/livez", "/readyz", "/healthz", "/metrics", "/openapi.yaml"]

    static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// A level by name, in any case, with `warn` for `warning` (what most tools call it).
    public static func logLevel(named name: String) -> Logger.Level? {
        let lower = name.lowercased()
        return Logger.Level(rawValue: lower == "warn" ? "warning" : lower)
    }

    /// The settings in use, for the one start-up line: secrets never (header values and the
    /// admin token are left out; passwords and credential parameters in URLs are redacted).
    public var summary: Logger.Metadata {
        func url(_ text: String?) -> Logger.MetadataValue {
            text.map { .string(RedactedURL.text($0)) } ?? "none"
        }
        func seconds(_ duration: Duration) -> Logger.MetadataValue { .stringConvertible(duration.seconds) }
        var summary: Logger.Metadata = [
            "host": .string(host), "port": .stringConvertible(port), "cache_dir": .string(cacheDirectory),
            "memory_limit": .stringConvertible(memoryLimit), "disk_limit": .stringConvertible(diskLimit),
            "weather_url": url(weatherURL), "balance_url": url(balanceURL),
            "weather_ttl_s": seconds(weatherTTL), "balance_ttl_s": seconds(balanceTTL),
            "stale_while_revalidate_s": seconds(staleWhileRevalidate), "stale_if_error_s": seconds(staleIfError),
            "upstream_timeout_s": seconds(upstreamTimeout), "upstream_concurrency": .stringConvertible(upstreamConcurrency),
            "event_loops": .stringConvertible(serverConfiguration.eventLoops),
            "upstream_backoff_s": seconds(upstreamBackoff), "refresh_min_interval_s": seconds(refreshMinInterval),
            "coordinate_precision": .stringConvertible(coordinatePrecision), "log_level": .string(logLevel),
            "log_format": .string(logFormat.rawValue), "demo": .stringConvertible(demo),
            "routes": .string(routes.isEmpty ? "none" : routes.map(\.description).joined(separator: ",")),
            "ca_file": .string(caFile ?? "system"),
            "weather_headers": .string(weatherHeaders.isEmpty ? "none" : CredentialHeaders.redacted(weatherHeaders)),
            "balance_headers": .string(balanceHeaders.isEmpty ? "none" : CredentialHeaders.redacted(balanceHeaders)),
        ]
        summary["admin"] = adminPort.map { .string("\(adminHost):\($0)") } ?? "off"
        summary["redis"] = redisURL.map { .string($0.description) } ?? "off"
        if redisURL != nil {
            summary["redis_timeout_s"] = seconds(redisTimeout)
            summary["redis_prefix"] = .string(redisPrefix)
        }
        return summary
    }

    /// The server's part of these settings.
    public var serverConfiguration: HTTPServerConfiguration {
        var configuration = HTTPServerConfiguration(host: host, port: port)
        if let eventLoops { configuration.eventLoops = eventLoops }
        return configuration
    }
}

/// A configuration value that cannot be used; its message is the one line printed on stderr.
public struct ConfigurationError: Error, Equatable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension ServeSettings {
    /// The duration syntax of every setting (`80ms`, `10m`), for other commands' options.
    public static func parseDuration(_ text: String) -> Duration? { SettingValues.duration(text) }
}
