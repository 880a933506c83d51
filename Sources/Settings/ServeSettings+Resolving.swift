import Configuration
import Foundation
import HTTPCore
import RedisVocabulary

extension ServeSettings {
    /// `flags` maps configuration keys (`host`, `cache.dir`, …) to what was given on the
    /// command line; `environment` is read as `LARDER_HOST`, `LARDER_CACHE_DIR`, …; `file` is
    /// a configuration file's (`ConfigFile`). A flag wins over the environment, and both over
    /// the file. Every problem is reported, each on its own line.
    public static func resolve(flags: [String: String], environment: [String: String],
                               file: ConfigFile? = nil) throws(ConfigurationError) -> ServeSettings {
        let declarations = Self.declarations
        var values: [AbsoluteConfigKey: ConfigValue] = [:]
        for declaration in declarations {
            guard let value = flags[declaration.key] else { continue }
            values[Self.configKey(declaration.key)] = ConfigValue(.string(value), isSecret: declaration.secret)
        }
        // swift-configuration maps the key larder.cache.dir to LARDER_CACHE_DIR, and the file's
        // provider to its cache-dir.
        var providers: [any ConfigProvider] = [
            InMemoryProvider(name: "flags", values: values),
            EnvironmentVariablesProvider(environmentVariables: environment),
        ]
        if let file { providers.append(file.provider) }
        let reader = ConfigReader(providers: providers)
        var problems: [String] = []
        var s = ServeSettings()
        // The header lists' value files, read on from the routes' (each file once in all).
        var valueFiles = file?.valueFiles ?? ValueFiles()
        for declaration in declarations {
            let given = flags[declaration.key] != nil || environment[declaration.variable] != nil
            if !given, case .list = declaration.shape {
                // A file's list is read item by item: header values may hold the commas a list
                // joins with. A file's routes are a mapping, read below.
                if let file, let items = file.lists[declaration.fileKey] {
                    problems += file.read(items, declaration, files: &valueFiles, into: &s)
                }
                continue
            }
            guard let text = reader.string(forKey: ConfigKey(Self.configKey(declaration.key).components), isSecret: declaration.secret) else {
                continue
            }
            if let problem = declaration.read(text, &s) {
                // Where the value came from, as a problem names it: the flag and its variable, or the file's line.
                if let file, !given {
                    problems.append("\(file.place(declaration.fileKey)) \(problem)")
                } else {
                    problems.append("\(declaration.flag) (\(declaration.variable)) \(problem)")
                }
            }
        }
        let routesGiven = flags["routes"] != nil || environment["LARDER_ROUTES"] != nil
        if routesGiven {
            if let problem = RouteMount.unreachable(s.routes, builtIn: s.servedPaths).first {
                problems.append("--route (LARDER_ROUTES) \(problem.reason): a route that can never match is refused")
            }
        } else if let file {
            s.routes = file.mounts(builtIn: s.servedPaths, problems: &problems)
        }
        if let file { s.aggregates = file.aggregates(served: s.servedPaths, mounts: s.routes, problems: &problems) }
        if s.adminPort != nil, reader.string(forKey: ConfigKey(["larder", "admin", "token", "file"])) == nil {
            problems.append("--admin-port (LARDER_ADMIN_PORT) needs --admin-token-file (LARDER_ADMIN_TOKEN_FILE): the admin listener never runs without a token")
        }
        if let file { problems = file.inLineOrder(file.problems + problems) }
        if !problems.isEmpty { throw ConfigurationError(problems: problems) }
        return s
    }

    /// `larder.cache.dir`: the key swift-configuration reads a setting under.
    static func configKey(_ key: String) -> AbsoluteConfigKey {
        AbsoluteConfigKey(["larder"] + key.split(separator: ".").map(String.init))
    }
}
