public import Settings
public import Upstream

/// What `larder healthcheck` asks without `--url`: readiness where `serve` listens with the
/// same configuration file and environment, so the image's HEALTHCHECK follows the file's
/// `port`, `LARDER_PORT` and `LARDER_HOST`. A wildcard host (`0.0.0.0`, `::`) is asked on
/// loopback; a port that is not one falls back to the default, as the server would refuse
/// to start on it anyway.
public enum HealthCheckDefaults {
    public static func url(environment: [String: String]) -> String {
        let defaults = ServeSettings()
        let port = environment["LARDER_PORT"].flatMap { Int($0) }.flatMap { (1...65535).contains($0) ? $0 : nil } ?? defaults.port
        let host = environment["LARDER_HOST"].flatMap { $0.isEmpty ? nil : $0 } ?? defaults.host
        return url(host: host, port: port)
    }

    /// Readiness where settings resolved as `serve` resolves them say Larder listens.
    public static func url(settings: ServeSettings) -> String {
        url(host: settings.host, port: (1...65535).contains(settings.port) ? settings.port : ServeSettings().port)
    }

    private static func url(host: String, port: Int) -> String {
        var host = host
        switch host {
        case "0.0.0.0": host = "127.0.0.1"
        case "::", "[::]": host = "::1"
        default: break
        }
        if host.contains(":"), !host.hasPrefix("[") { host = "[\(host)]" }
        return "http://\(host):\(port)/readyz"
    }

    /// Why a healthcheck of `url` fails, in words for standard error; nil for a 2xx. It names
    /// Larder, not an upstream: the process asked is the one that did not answer.
    public static func problem(url: String, _ outcome: Result<Int, UpstreamError>) -> String? {
        switch outcome {
        case .success(let status) where (200..<300).contains(status): nil
        case .success(let status): "Larder at \(url) answered \(status)"
        case .failure(.timeout): "Larder at \(url) did not answer within 3 s"
        case .failure(.cannotConnect(let detail)), .failure(.cannotResolve(let detail)), .failure(.connectionLost(let detail)):
            "Larder at \(url) could not be reached: \(detail)"
        case .failure(let error): "Larder at \(url) could not be reached: \(error)"
        }
    }
}
