import Configuration
import Foundation
import HTTPCore
import Redis

extension ServeSettings {
    /// `flags` maps configuration keys (`host`, `cache.dir`, …) to what was given on the
    /// command line; `environment` is read as `LARDER_HOST`, `LARDER_CACHE_DIR`, …; `file` is
    /// a configuration file's (`ConfigFile`). A flag wins over the environment, and both over
    /// the file. Every problem is reported, each on its own line.
    public static func resolve(flags: [String: String], environment: [String: String],
                               file: ConfigFile? = nil) throws(ConfigurationError) -> ServeSettings {
        var values: [AbsoluteConfigKey: ConfigValue] = [:]
        for (key, value) in flags {
            values[AbsoluteConfigKey(["larder"] + key.split(separator: ".").map(String.init))] = ConfigValue(.string(value), isSecret: key.hasSuffix(".headers") || key == "redis.url")
        }
        // swift-configuration maps the key larder.cache.dir to LARDER_CACHE_DIR, and the file's
        // provider to its cache-dir.
        var providers: [any ConfigProvider] = [
            InMemoryProvider(name: "flags", values: values),
            EnvironmentVariablesProvider(environmentVariables: environment),
        ]
        if let file { providers.append(file.provider) }
        let reader = ConfigReader(providers: providers)
        func string(_ key: String) -> String? {
            reader.string(forKey: ConfigKey(["larder"] + key.split(separator: ".").map(String.init)))
        }
        var problems: [String] = []
        /// Where a value came from, as a problem names it: the flag and its variable, or the file's line.
        func source(_ key: String) -> String {
            let option = Option(key: key)
            if let file, flags[key] == nil, environment[option.variable] == nil { return file.place(ConfigFile.fileKey(key)) }
            return "\(option.flag) (\(option.variable))"
        }
        func read<T>(_ key: String, _ what: String, _ parse: (String) -> T?) -> T? {
            guard let text = string(key) else { return nil }
            guard let value = parse(text) else {
                problems.append("\(source(key)) must be \(what), got '\(QuotedText.of(text))'")
                return nil
            }
            return value
        }

        var s = ServeSettings()
        if let host = read("host", "a host name or address", { $0.isEmpty ? nil : $0 }) { s.host = host }
        if let port = read("port", "a whole number from 0 to 65535", { Int($0).flatMap { (0...65535).contains($0) ? $0 : nil } }) { s.port = port }
        if let dir = read("cache.dir", "a directory path", { $0.isEmpty ? nil : $0 }) { s.cacheDirectory = dir }
        let size = "a size (bytes, or with B, KiB, MiB, GiB)"
        if let v = read("memory.limit", size, SettingValues.bytes) { s.memoryLimit = v }
        if let v = read("disk.limit", size, SettingValues.bytes) { s.diskLimit = v }
        if let v = read("max.request.body", "a size from 1B to 1GiB", SettingValues.requestBodyLimit) { s.maxRequestBody = v }
        if let v = read("max.object.size", "a size from 1KiB to 1GiB", SettingValues.objectSizeLimit) { s.maxObjectSize = v }
        let url = "an http:// or https:// URL"
        if let v = read("weather.url", url, { SettingValues.isHTTPURL($0) ? $0 : nil }) { s.weatherURL = v; s.weatherURLGiven = true }
        if let v = read("balance.url", url, { SettingValues.isHTTPURL($0) ? $0 : nil }) { s.balanceURL = v }
        let duration = "a duration (seconds, or with us, ms, s, m, h)"
        if let v = read("weather.ttl", duration, SettingValues.duration) { s.weatherTTL = v }
        if let v = read("balance.ttl", duration, SettingValues.duration) { s.balanceTTL = v }
        if let v = read("stale.while.revalidate", duration, SettingValues.duration) { s.staleWhileRevalidate = v }
        if let v = read("stale.if.error", duration, SettingValues.duration) { s.staleIfError = v }
        if let v = read("upstream.timeout", "a duration above zero", { SettingValues.duration($0).flatMap { $0 > .zero ? $0 : nil } }) {
            s.upstreamTimeout = v
        }
        if let v = read("upstream.concurrency", "a whole number from 1 to 1024", SettingValues.upstreamConcurrency) { s.upstreamConcurrency = v }
        if let v = read("event.loops", "a whole number from 1 to 256", { Int($0).flatMap { (1...256).contains($0) ? $0 : nil } }) {
            s.eventLoops = v
        }
        if let v = read("unused.connections.per.client", "a whole number from 1 to 100000", {
            Int($0).flatMap { (1...100_000).contains($0) ? $0 : nil }
        }) { s.unusedConnectionsPerClient = v }
        if let v = read("upstream.backoff", "a duration from 1s to 60s", {
            SettingValues.duration($0).flatMap { $0 >= .seconds(1) && $0 <= .seconds(60) ? $0 : nil }
        }) { s.upstreamBackoff = v }
        if let v = read("refresh.min.interval", duration, SettingValues.duration) { s.refreshMinInterval = v }
        if let v = read("ca.file", "a readable PEM file of CA certificates", SettingValues.readableFile) { s.caFile = v }
        if let v = read("coordinate.precision", "a whole number from 0 to 6", { Int($0).flatMap { (0...6).contains($0) ? $0 : nil } }) {
            s.coordinatePrecision = v
        }
        if let v = read("log.level", "one of \(logLevels.joined(separator: ", ")) (or warn)", { logLevel(named: $0).map(\.rawValue) }) {
            s.logLevel = v
        }
        if let v = read("log.format", "text or json", LogFormat.init(rawValue:)) { s.logFormat = v }
        if let v = read("built.in.routes", "weather, balance, both as a comma list, or none", Self.builtInRoutes) { s.builtInRoutes = v }
        if let v = read("routes", "a comma list of PREFIX=ORIGIN (a path starting with / and an http:// or https:// URL)",
                        RouteMount.parseList) {
            s.routes = v
            if let problem = RouteMount.unreachable(s.routes, builtIn: s.servedPaths).first {
                problems.append("--route (LARDER_ROUTES) \(problem.reason): a route that can never match is refused")
            }
        } else if let file {
            s.routes = file.mounts(builtIn: s.servedPaths, problems: &problems)
        }
        if let file { s.aggregates = file.aggregates(served: s.servedPaths, mounts: s.routes, problems: &problems) }
        for (key, keep) in [("weather.headers", \ServeSettings.weatherHeaders), ("balance.headers", \ServeSettings.balanceHeaders)] {
            // Not through `read`: its error repeats the value given, and these values are secrets.
            // A file's list is read item by item: header values may hold the commas a list joins with.
            let given = flags[key] != nil || environment[Option(key: key).variable] != nil
            guard let text = given ? string(key) : file?.lists[ConfigFile.fileKey(key)]?.joined(separator: "\n") else { continue }
            switch CredentialHeaders.parseList(text) {
            case .success(let fields): s[keyPath: keep] = fields
            case .failure(let problem):
                problems.append("\(source(key)) must be 'Name: value' or 'Name: @/path': \(problem.reason)")
            }
        }
        if let v = read("admin.port", "a whole number from 0 to 65535", { Int($0).flatMap { (0...65535).contains($0) ? $0 : nil } }) {
            s.adminPort = v
        }
        if let v = read("admin.host", "a host name or address", { $0.isEmpty ? nil : $0 }) { s.adminHost = v }
        if let v = read("admin.token.file", "a readable file holding the admin token", SettingValues.readableFile) {
            // Not through `read`'s message: the file's content is a secret.
            if let token = SettingValues.token(inFile: v) {
                s.adminToken = token
            } else {
                problems.append("\(source("admin.token.file")) must hold a token of visible ASCII characters: \(v) does not")
            }
        }
        if s.adminPort != nil, string("admin.token.file") == nil {
            problems.append("--admin-port (LARDER_ADMIN_PORT) needs --admin-token-file (LARDER_ADMIN_TOKEN_FILE): the admin listener never runs without a token")
        }
        if let v = read("redis.url", "a redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] URL", RedisURL.init) { s.redisURL = v }
        if let v = read("redis.timeout", "a duration from 1ms to 10s", {
            SettingValues.duration($0).flatMap { $0 >= .milliseconds(1) && $0 <= .seconds(10) ? $0 : nil }
        }) { s.redisTimeout = v }
        if let v = read("redis.prefix", "1 to 64 visible ASCII characters", {
            (1...64).contains($0.utf8.count) && $0.utf8.allSatisfy { (0x21...0x7E).contains($0) } ? $0 : nil
        }) { s.redisPrefix = v }
        if let v = read("demo", "true or false", { ["true": true, "1": true, "false": false, "0": false][$0.lowercased()] }) { s.demo = v }
        if !problems.isEmpty { throw ConfigurationError(problems: problems) }
        return s
    }


    /// `none`, or a comma list of built-in route names.
    static func builtInRoutes(_ text: String) -> Set<String>? {
        if text.trimmingCharacters(in: .whitespaces) == "none" { return [] }
        let names = Set(text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        return !names.isEmpty && names.isSubset(of: ["weather", "balance"]) ? names : nil
    }
}
