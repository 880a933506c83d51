import ArgumentParser
import CLinux
import Foundation
import Larder
import Logging
import Observability
import Settings
import Simulator
import Upstream

/// The `larder` executable: argument parsing and wiring only.
@main
struct LarderCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "larder",
        abstract: "A caching HTTP service: built-in weather and balance routes, and an RFC 9111 gateway cache for any origin through pass-through routes (--route, or routes in --config).",
        version: Version.current,
        subcommands: [Serve.self, CheckConfig.self, UpstreamSim.self, HealthCheck.self],
        defaultSubcommand: Serve.self)

    /// Parses and runs; every usage or configuration error exits with status 2 and one line on stderr.
    static func main() async {
        MemoryReturn.configure()
        do {
            var command = try parseAsRoot()
            if var async = command as? AsyncParsableCommand {
                try await async.run()
            } else {
                try command.run()
            }
        } catch let error as ConfigurationError {
            fail(error.problems)
        } catch let exit as ExitCode {
            Foundation.exit(exit.rawValue)
        } catch {
            if exitCode(for: error) == .success { exit(withError: error) }
            fail(message(for: error))
        }
    }

    static func fail(_ message: String) -> Never {
        fail([message])
    }

    /// One line per problem on stderr, then exit status 2.
    static func fail(_ problems: [String]) -> Never {
        FileHandle.standardError.write(Data(problems.map { "larder: \($0)\n" }.joined().utf8))
        Foundation.exit(2)
    }
}

/// glibc raises its mmap threshold each time a large block is freed, until answers of a
/// few MiB come from the heap arenas and their memory is never handed back: RSS then grows
/// with every large answer ever seen. A fixed threshold keeps large bodies in mappings of
/// their own, returned on free; two arenas per core (glibc's default is eight) keep the
/// free memory held in idle arenas from adding up across threads.
enum MemoryReturn {
    static func configure() {
        larder_malloc_configure(128 * 1024, Int32(2 * max(1, ProcessInfo.processInfo.activeProcessorCount)))
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the service (the default command). Every option can also be set by its LARDER_* variable.")

    @Option(help: "Listen address (LARDER_HOST, default 127.0.0.1).") var host: String?
    @Option(help: "Listen port, 0 for any free port (LARDER_PORT, default 8080).") var port: String?
    @Option(help: "Disk tier directory (LARDER_CACHE_DIR, default .larder-cache).") var cacheDir: String?
    @Option(help: "Memory tier budget: bytes or B, KiB, MiB, GiB (LARDER_MEMORY_LIMIT, default 64MiB).") var memoryLimit: String?
    @Option(help: "Disk tier budget (LARDER_DISK_LIMIT, default 1GiB).") var diskLimit: String?
    @Option(help: "Largest request body on the built-in routes; 413 past it (LARDER_MAX_REQUEST_BODY, default 1MiB, at most 1GiB). Pass-through routes take 64MiB unless they set their own.") var maxRequestBody: String?
    @Option(help: "Largest answer stored; a larger one is relayed and not stored (LARDER_MAX_OBJECT_SIZE, default and at most 1GiB).") var maxObjectSize: String?
    @Option(help: "Weather upstream (LARDER_WEATHER_URL, default https://api.open-meteo.com/v1/forecast).") var weatherUrl: String?
    @Option(help: "Balance upstream (LARDER_BALANCE_URL); unset: /balance answers 503.") var balanceUrl: String?
    @Option(help: "Weather freshness when the upstream gives none: 90, 90s, 10m, 1h (LARDER_WEATHER_TTL, default 10m).") var weatherTtl: String?
    @Option(help: "Balance freshness when the upstream gives none (LARDER_BALANCE_TTL, default 60s).") var balanceTtl: String?
    @Option(help: "Serve stale this long while one refresh runs (LARDER_STALE_WHILE_REVALIDATE, default 30s).") var staleWhileRevalidate: String?
    @Option(help: "Serve stale this long when the upstream fails; 0 = never (LARDER_STALE_IF_ERROR, default 24h).") var staleIfError: String?
    @Option(help: "Whole upstream exchange (LARDER_UPSTREAM_TIMEOUT, default 5s).") var upstreamTimeout: String?
    @Option(help: "Requests in flight to one upstream at most; the rest wait in a queue of 1024 (LARDER_UPSTREAM_CONCURRENCY, default 16).") var upstreamConcurrency: String?
    @Option(help: "Event loops serving the port, one thread each (LARDER_EVENT_LOOPS, 1 to 256, default one per CPU).") var eventLoops: String?
    @Option(help: "Connections from one client address that have sent nothing yet; one more is closed at once while half the connection slots are taken (LARDER_UNUSED_CONNECTIONS_PER_CLIENT, default 64).") var unusedConnectionsPerClient: String?
    @Option(help: "First pause of an upstream that answers 429/503 without Retry-After or fails 5 times in a row, doubled up to 60s while failures continue (LARDER_UPSTREAM_BACKOFF, default 5s).") var upstreamBackoff: String?
    @Option(help: "At most one client-forced refresh (no-cache, max-age=0) per key of /weather and /balance in this time; 0 = no limit (LARDER_REFRESH_MIN_INTERVAL, default 5s).") var refreshMinInterval: String?
    @Option(help: "PEM file of the CAs https upstreams are verified against (LARDER_CA_FILE, default: the system's).") var caFile: String?
    @Option(help: "Decimals kept of lat/lon (LARDER_COORDINATE_PRECISION, default 2).") var coordinatePrecision: String?
    @Option(help: "trace … critical (LARDER_LOG_LEVEL, default info).") var logLevel: String?
    @Option(help: "text or json (LARDER_LOG_FORMAT, default text).") var logFormat: String?
    @Option(help: ArgumentHelp("Pass-through route PREFIX=ORIGIN, repeatable (LARDER_ROUTES, a comma list): requests under PREFIX go to ORIGIN, cached per RFC 9111.",
                               valueName: "prefix=origin")) var route: [String] = []
    @Option(help: ArgumentHelp("Header field sent to the weather upstream, repeatable; @/path reads the value from a file (LARDER_WEATHER_HEADERS, one per line).",
                               valueName: "name: value")) var weatherHeader: [String] = []
    @Option(help: ArgumentHelp("Header field sent to the balance upstream, repeatable; @/path reads the value from a file (LARDER_BALANCE_HEADERS, one per line).",
                               valueName: "name: value")) var balanceHeader: [String] = []
    @Option(help: "Port of the admin listener (purge, inspection); off when unset; 0 = any free port (LARDER_ADMIN_PORT).") var adminPort: String?
    @Option(help: "Address of the admin listener (LARDER_ADMIN_HOST, default 127.0.0.1).") var adminHost: String?
    @Option(help: "File holding the admin bearer token; required with --admin-port (LARDER_ADMIN_TOKEN_FILE).") var adminTokenFile: String?
    @Option(help: "Redis shared by every replica: redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]; off when unset (LARDER_REDIS_URL).") var redisUrl: String?
    @Option(help: "Longest any request waits on Redis before going on without it (LARDER_REDIS_TIMEOUT, default 100ms).") var redisTimeout: String?
    @Option(help: "Prefix of every Redis key and channel Larder uses (LARDER_REDIS_PREFIX, default larder:).") var redisPrefix: String?
    @Flag(help: "Start the upstream simulator in-process and use it for every upstream not given (LARDER_DEMO).") var demo = false
    @Option(help: "Built-in routes served: weather, balance (a comma list), or none for a gateway only; /overview needs both (LARDER_BUILT_IN_ROUTES, default weather,balance).") var builtInRoutes: String?
    @Option(help: "Configuration file, YAML or JSON, with any of these settings under their names (cache-dir: …) and pass-through routes; flags and LARDER_* variables win over it (LARDER_CONFIG).") var config: String?

    func run() async throws {
        var flags: [String: String] = [:]
        flags["host"] = host
        flags["port"] = port
        flags["cache.dir"] = cacheDir
        flags["memory.limit"] = memoryLimit
        flags["disk.limit"] = diskLimit
        flags["max.request.body"] = maxRequestBody
        flags["max.object.size"] = maxObjectSize
        flags["weather.url"] = weatherUrl
        flags["balance.url"] = balanceUrl
        flags["weather.ttl"] = weatherTtl
        flags["balance.ttl"] = balanceTtl
        flags["stale.while.revalidate"] = staleWhileRevalidate
        flags["stale.if.error"] = staleIfError
        flags["upstream.timeout"] = upstreamTimeout
        flags["upstream.concurrency"] = upstreamConcurrency
        flags["event.loops"] = eventLoops
        flags["unused.connections.per.client"] = unusedConnectionsPerClient
        flags["upstream.backoff"] = upstreamBackoff
        flags["refresh.min.interval"] = refreshMinInterval
        flags["ca.file"] = caFile
        flags["coordinate.precision"] = coordinatePrecision
        flags["log.level"] = logLevel
        flags["log.format"] = logFormat
        flags["admin.port"] = adminPort
        flags["admin.host"] = adminHost
        flags["admin.token.file"] = adminTokenFile
        flags["redis.url"] = redisUrl
        flags["redis.timeout"] = redisTimeout
        flags["redis.prefix"] = redisPrefix
        if !route.isEmpty { flags["routes"] = route.joined(separator: ",") }
        if !weatherHeader.isEmpty { flags["weather.headers"] = weatherHeader.joined(separator: "\n") }
        if !balanceHeader.isEmpty { flags["balance.headers"] = balanceHeader.joined(separator: "\n") }
        if demo { flags["demo"] = "true" }
        flags["built.in.routes"] = builtInRoutes
        let environment = ProcessInfo.processInfo.environment
        var file: ConfigFile?
        if let path = config ?? environment["LARDER_CONFIG"] { file = try await ConfigFile.load(path: path) }
        let given = flags
        var settings = try ServeSettings.resolve(flags: flags, environment: environment, file: file)
        LogOutput.bootstrap(level: settings.logLevel, format: settings.logFormat)
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
            try await LarderService(settings: settings, readSettings: readSettings, watchedFile: path).runUntilSignalled()
        } catch {
            await simulator?.shutdown()
            throw error
        }
        await simulator?.shutdown()
    }
}

struct UpstreamSim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upstream-sim", abstract: "Run the upstream simulator alone (Open-Meteo and balance formats).")

    @Option(help: "Listen address.") var host = "127.0.0.1"
    @Option(help: "Listen port, 0 for any free port.") var port = 8081
    @Option(help: "Added to every answer: 80ms, 1s, 0.") var latency = "80ms"
    @Option(help: "Share of requests answered 503, from 0 to 1.") var errorRate = 0.0
    @Option(help: "max-age sent with every answer, in seconds.") var maxAge = 60

    func run() async throws {
        LogOutput.bootstrap(level: "info", format: .text)
        guard (0...65535).contains(port) else { throw ConfigurationError("--port must be from 0 to 65535, got \(port)") }
        guard (0...1).contains(errorRate) else { throw ConfigurationError("--error-rate must be from 0 to 1, got \(errorRate)") }
        guard maxAge >= 0 else { throw ConfigurationError("--max-age must not be negative") }
        var settings = UpstreamSimulator.Settings()
        settings.host = host
        settings.port = port
        settings.errorRate = errorRate
        settings.maxAge = maxAge
        guard let latency = ServeSettings.parseDuration(latency) else {
            throw ConfigurationError("--latency must be a duration (seconds, or with ms, s, m, h), got '\(latency)'")
        }
        settings.latency = latency
        try await SimulatorService(settings: settings).runUntilSignalled()
    }
}

struct HealthCheck: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "healthcheck", abstract: "Exit 0 when the URL answers 2xx, else 1 (for Docker HEALTHCHECK).")

    @Option(help: "The URL to ask (default: /readyz where serve listens with the same file and environment).")
    var url: String?
    @Option(help: "The configuration file serve reads, for its host and port (LARDER_CONFIG).") var config: String?

    /// Unhealthy says why on standard error (the orchestrator keeps it with the probe's result).
    func run() async throws {
        let url: String
        if let given = self.url { url = given } else { url = try await defaultURL() }
        let client = UpstreamClient()
        let outcome: Result<Int, UpstreamError>
        do {
            outcome = .success(try await client.fetch(UpstreamRequest(url: url, timeout: .seconds(3))).status)
        } catch {
            outcome = .failure(error as? UpstreamError ?? .invalidRequest("\(error)"))
        }
        await client.shutdown()
        if let problem = HealthCheckDefaults.problem(url: url, outcome) {
            FileHandle.standardError.write(Data("larder healthcheck: \(problem)\n".utf8))
            throw ExitCode(1)
        }
    }

    /// Where `serve` listens: the file (if any), then the environment over it. A file that
    /// cannot be read is unhealthy, as `serve` would not start on it.
    private func defaultURL() async throws -> String {
        let environment = ProcessInfo.processInfo.environment
        guard let path = config ?? environment["LARDER_CONFIG"] else { return HealthCheckDefaults.url(environment: environment) }
        do {
            let file = try await ConfigFile.load(path: path)
            return HealthCheckDefaults.url(settings: try ServeSettings.resolve(flags: [:], environment: environment, file: file))
        } catch {
            FileHandle.standardError.write(Data("larder healthcheck: \(error.problems.first ?? "the configuration file cannot be read")\n".utf8))
            throw ExitCode(1)
        }
    }
}
