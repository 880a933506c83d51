import Configuration
import HTTPServer

/// The settings of `larder serve`, resolved flag over environment over default
/// (swift-configuration) and validated once at start, so a bad value stops the
/// process before it binds anything.
public struct ServeSettings: Sendable, Equatable {
    public var host: String
    public var port: Int
    public var logLevel: String
    public var logFormat: LogFormat

    public enum LogFormat: String, Sendable, Equatable { case text, json }

    /// `flags` maps configuration keys (`host`, `port`, …) to what was given on the command
    /// line; `environment` is read as `LARDER_HOST`, `LARDER_PORT`, ….
    public static func resolve(flags: [String: String], environment: [String: String]) throws(ConfigurationError) -> ServeSettings {
        var values: [AbsoluteConfigKey: ConfigValue] = [:]
        for (key, value) in flags {
            values[AbsoluteConfigKey(["larder", key])] = ConfigValue(.string(value), isSecret: false)
        }
        let reader = ConfigReader(providers: [
            InMemoryProvider(name: "flags", values: values),
            EnvironmentVariablesProvider(environmentVariables: environment),
        ])
        func string(_ key: String, _ fallback: String) -> String {
            reader.string(forKey: ConfigKey(["larder", key]), default: fallback)
        }

        let host = string("host", "127.0.0.1")
        guard !host.isEmpty else { throw ConfigurationError("--host (LARDER_HOST) must not be empty") }
        let portText = string("port", "8080")
        guard let port = Int(portText), (0...65535).contains(port) else {
            throw ConfigurationError("--port (LARDER_PORT) must be a whole number from 0 to 65535, got '\(portText)'")
        }
        let level = string("log.level", "info")
        guard Self.logLevels.contains(level) else {
            throw ConfigurationError("--log-level (LARDER_LOG_LEVEL) must be one of \(Self.logLevels.joined(separator: ", ")), got '\(level)'")
        }
        let formatText = string("log.format", "text")
        guard let format = LogFormat(rawValue: formatText) else {
            throw ConfigurationError("--log-format (LARDER_LOG_FORMAT) must be text or json, got '\(formatText)'")
        }
        return ServeSettings(host: host, port: port, logLevel: level, logFormat: format)
    }

    static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// The server's part of these settings.
    public var serverConfiguration: HTTPServerConfiguration {
        HTTPServerConfiguration(host: host, port: port)
    }
}

/// A configuration value that cannot be used; its message is the one line printed on stderr.
public struct ConfigurationError: Error, Equatable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
