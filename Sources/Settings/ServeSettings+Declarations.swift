import Foundation
import HTTPServer
import HTTPCore
import Bodies
import Logging
import RedisVocabulary

extension ServeSettings {
    /// Every setting of `larder serve`, each declared once, in the order `--help`, the README's
    /// table and `deploy/larder.example.yaml` list them (a test keeps those two in step).
    /// Built on each use: a cold path (start-up, reload), and closures over key paths are
    /// not `Sendable`, which a stored table shared by every thread would need.
    public static var declarations: [SettingDeclaration] {
        let address = "a host name or address"
        return [
            .stored("host", \.host, default: .value("127.0.0.1"), expects: address, help: "Listen address", needsRestart: true,
                    parse: { $0.isEmpty ? nil : $0 }),
            .whole("port", \.port, in: 0...65535, default: .value("8080"), help: "Listen port, 0 for any free port", needsRestart: true,
                   wrap: { $0 }),
            .stored("cache.dir", \.cacheDirectory, default: .value(".larder-cache"), expects: "a directory path",
                    help: "Disk tier directory", needsRestart: true, parse: { $0.isEmpty ? nil : $0 }),
            .size("memory.limit", \.memoryLimit, default: .value("64MiB"), help: "Memory tier budget: bytes or B, KiB, MiB, GiB", needsRestart: true),
            .size("disk.limit", \.diskLimit, default: .value("1GiB"), help: "Disk tier budget", needsRestart: true),
            .size("max.request.body", \.maxRequestBody, in: SettingValues.requestBodyRange, default: .value("1MiB"),
                  help: "Largest request body on the built-in routes; 413 past it. Pass-through routes take 64MiB unless they set their own",
                  needsRestart: true),
            .size("max.object.size", \.maxObjectSize, in: SettingValues.objectSizeRange, default: .value("1GiB"),
                  help: "Largest answer stored (at most 1GiB); a larger one is relayed and not stored"),
            .stored("weather.url", \.givenWeatherURL, default: .value("https://api.open-meteo.com/v1/forecast"), expects: Self.httpURL,
                    help: "Weather upstream", parse: { SettingValues.isHTTPURL($0) ? $0 : nil },
                    show: { ["weather_url": .string(RedactedURL.text($0.weatherURL))] }),
            .stored("balance.url", \.balanceURL, default: .unset("none"), expects: Self.httpURL,
                    help: "Balance upstream; unset, /balance answers 503", parse: { SettingValues.isHTTPURL($0) ? $0 : nil },
                    show: { ["balance_url": $0.balanceURL.map { .string(RedactedURL.text($0)) } ?? "none"] }),
            .duration("weather.ttl", \.weatherTTL, default: .value("10m"), help: "Weather freshness when the upstream gives none: 90, 90s, 10m, 1h"),
            .duration("balance.ttl", \.balanceTTL, default: .value("60s"), help: "Balance freshness when the upstream gives none"),
            .duration("stale.while.revalidate", \.staleWhileRevalidate, default: .value("30s"), help: "Serve stale this long while one refresh runs"),
            .duration("stale.if.error", \.staleIfError, default: .value("24h"), help: "Serve stale this long when the upstream fails; 0 = never"),
            .duration("upstream.timeout", \.upstreamTimeout, in: .aboveZero, default: .value("5s"), help: "Whole upstream exchange"),
            .whole("upstream.concurrency", \.upstreamConcurrency, in: SettingValues.upstreamConcurrencyRange, default: .value("16"),
                   help: "Requests in flight to one upstream at most; the rest wait in a queue of 1024", wrap: { $0 }),
            .whole("event.loops", \.eventLoops, in: 1...256, default: .unset("one per CPU"), help: "Event loops serving the port, one thread each (1 to 256)",
                   needsRestart: true, wrap: { $0 }, show: { ["event_loops": .stringConvertible($0.serverConfiguration.eventLoops)] }),
            .whole("unused.connections.per.client", \.unusedConnectionsPerClient, in: 1...100_000, default: .value("64"),
                   help: "Connections from one client address that have sent nothing yet; one more is closed at once while half the connection slots are taken",
                   needsRestart: true, wrap: { $0 }),
            .duration("upstream.backoff", \.upstreamBackoff, in: .within(.seconds(1) ... .seconds(60)), default: .value("5s"),
                      help: "First pause of an upstream that answers 429/503 without Retry-After or fails 5 times in a row, doubled up to 60s while failures continue"),
            .duration("refresh.min.interval", \.refreshMinInterval, default: .value("5s"),
                      help: "At most one client-forced refresh (no-cache, max-age=0) per key of /weather and /balance in this time; 0 = no limit"),
            .stored("ca.file", \.caFile, default: .unset("the system's CAs"), expects: "a readable PEM file of CA certificates",
                    help: "PEM file of the CAs https upstreams are verified against", needsRestart: true, parse: SettingValues.readableFile,
                    show: { ["ca_file": .string($0.caFile ?? "system")] }),
            .whole("coordinate.precision", \.coordinatePrecision, in: 0...6, default: .value("2"), help: "Decimals kept of lat/lon", wrap: { $0 }),
            .stored("log.level", \.logLevel, default: .value("info"), expects: "one of \(logLevels.joined(separator: ", ")) (or warn)",
                    help: "trace … critical", needsRestart: true, parse: { logLevel(named: $0).map(\.rawValue) }),
            .stored("log.format", \.logFormat, default: .value("text"), expects: "text or json", help: "text (logfmt) or json",
                    needsRestart: true, parse: LogFormat.init(rawValue:), show: { ["log_format": .string($0.logFormat.rawValue)] }),
            .stored("tracing.endpoint", \.tracingEndpoint, default: .unset("off"), expects: Self.httpURL,
                    help: "OpenTelemetry collector traces are sent to over OTLP/HTTP (/v1/traces is added); setting it, or OTEL_EXPORTER_OTLP_ENDPOINT, turns tracing on",
                    needsRestart: true, parse: { SettingValues.isHTTPURL($0) ? $0 : nil },
                    show: { ["tracing_endpoint": $0.tracingEndpoint.map { .string(RedactedURL.text($0)) } ?? "off"] }),
            .stored("tracing.sample.ratio", \.tracingSampleRatio, default: .value("1"), expects: "a number from 0 to 1",
                    help: "Share of requests traced that bring no traceparent; a client's sampled flag is followed either way",
                    needsRestart: true, parse: SettingValues.ratio),
            .stored("routes", \.routes, shape: .list(separator: ","), default: .unset("none"),
                    expects: "a comma list of PREFIX=ORIGIN (a path starting with / and an http:// or https:// URL)",
                    help: "Pass-through route PREFIX=ORIGIN, repeatable: requests under PREFIX go to ORIGIN, cached per RFC 9111",
                    valueName: "prefix=origin", parse: RouteMount.parseList,
                    show: { ["routes": .string($0.routes.isEmpty ? "none" : $0.routes.map(\.description).joined(separator: ","))] }),
            .headers("weather.headers", \.weatherHeaders, upstream: "weather"),
            .headers("balance.headers", \.balanceHeaders, upstream: "balance"),
            .whole("admin.port", \.adminPort, in: 0...65535, default: .unset("off"),
                   help: "Port of the admin listener (purge, inspection); 0 = any free port", needsRestart: true, wrap: { $0 },
                   show: { settings in ["admin": settings.adminPort.map { .string("\(settings.adminHost):\($0)") } ?? "off"] }),
            .stored("admin.host", \.adminHost, default: .value("127.0.0.1"), expects: address, help: "Address of the admin listener",
                    needsRestart: true, parse: { $0.isEmpty ? nil : $0 }, show: { _ in [:] }),
            .adminTokenFile,
            .stored("redis.url", \.redisURL, default: .unset("off"), expects: "a redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] URL",
                    help: "Redis shared by every replica: redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]", needsRestart: true, secret: true,
                    parse: RedisURL.init, show: { ["redis": $0.redisURL.map { .string($0.description) } ?? "off"] }),
            .duration("redis.timeout", \.redisTimeout, in: .within(.milliseconds(1) ... .seconds(10)), default: .value("100ms"),
                      help: "Longest any request waits on Redis before going on without it", needsRestart: true,
                      show: { $0.redisURL == nil ? [:] : ["redis_timeout_s": .stringConvertible($0.redisTimeout.seconds)] }),
            .stored("redis.prefix", \.redisPrefix, default: .value("larder:"), expects: "1 to 64 visible ASCII characters",
                    help: "Prefix of every Redis key and channel Larder uses", needsRestart: true,
                    parse: { (1...64).contains($0.utf8.count) && $0.utf8.allSatisfy { (0x21...0x7E).contains($0) } ? $0 : nil },
                    show: { $0.redisURL == nil ? [:] : ["redis_prefix": .string($0.redisPrefix)] }),
            .stored("demo", \.demo, shape: .toggle, default: .value("false"), expects: "true or false",
                    help: "Start the upstream simulator in-process and use it for every upstream not given", needsRestart: true,
                    parse: { ["true": true, "1": true, "false": false, "0": false][$0.lowercased()] }),
            .stored("built.in.routes", \.builtInRoutes, default: .value("weather,balance"), expects: "weather, balance, both as a comma list, or none",
                    help: "Built-in routes served: weather, balance (a comma list), or none for a gateway only; /overview needs both",
                    needsRestart: true, parse: Self.builtInRoutes,
                    show: { ["built_in_routes": .string($0.builtInRoutes.isEmpty ? "none" : $0.builtInRoutes.sorted().joined(separator: ","))] }),
        ]
    }

    private static let httpURL = "an http:// or https:// URL"

    /// The weather URL as a setting stores it: remembered as given, so `--demo` leaves it alone.
    var givenWeatherURL: String {
        get { weatherURL }
        set {
            weatherURL = newValue
            weatherURLGiven = true
        }
    }

    /// `none`, or a comma list of built-in route names.
    static func builtInRoutes(_ text: String) -> Set<String>? {
        if text.trimmingCharacters(in: .whitespaces) == "none" { return [] }
        let names = Set(text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        return !names.isEmpty && names.isSubset(of: ["weather", "balance"]) ? names : nil
    }
}

extension SettingDeclaration {
    /// Fields sent to a built-in upstream: secrets, so a problem names what is wrong, never the value.
    static func headers(_ key: String, _ path: WritableKeyPath<ServeSettings, HTTPHeaders>, upstream: String) -> SettingDeclaration {
        let name = key.replacingOccurrences(of: ".", with: "_")
        let expects = "'Name: value' or 'Name: @/path'"
        let readItems = { (items: [String], files: inout ValueFiles, settings: inout ServeSettings) -> [(index: Int, problem: String)] in
            let read = CredentialHeaders.read(items, files: &files)
            if read.problems.isEmpty { settings[keyPath: path] = read.fields }
            return read.problems.map { ($0.index, "must be \(expects): \($0.problem.reason)") }
        }
        return SettingDeclaration(
            key: key, shape: .list(separator: "\n"), default: .unset("none"), expects: expects,
            help: "Header field sent to the \(upstream) upstream, repeatable; @/path reads the value from a file", valueName: "name: value",
            needsRestart: false, secret: true,
            read: { text, settings in
                // One item per flag (or line of the variable): no line continues another.
                var files = ValueFiles()
                return readItems(text.split(whereSeparator: \.isNewline).map(String.init), &files, &settings).first?.problem
            },
            readItems: readItems,
            keepRunning: { _, _ in false },
            shown: { ["\(name)": .string($0[keyPath: path].isEmpty ? "none" : CredentialHeaders.redacted($0[keyPath: path]))] })
    }

    /// The file of the admin token: the token is read at once, and never shown.
    static var adminTokenFile: SettingDeclaration {
        let expects = "a readable file holding the admin token"
        return SettingDeclaration(
            key: "admin.token.file", default: .unset("none"), expects: expects,
            help: "File holding the admin bearer token; required with --admin-port", needsRestart: true,
            read: { path, settings in
                guard SettingValues.readableFile(path) != nil else { return "must be \(expects), got '\(QuotedText.of(path))'" }
                // The file's content is a secret: the problem names the file only.
                guard let token = SettingValues.token(inFile: path) else {
                    return "must hold a token of visible ASCII characters: \(path) does not"
                }
                settings.adminToken = token
                return nil
            },
            keepRunning: { settings, running in
                defer { settings.adminToken = running.adminToken }
                return settings.adminToken != running.adminToken
            },
            shown: { _ in [:] })
    }
}
