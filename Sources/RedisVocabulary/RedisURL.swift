import Foundation

/// Where Redis is and how to log in: `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`
/// (`--redis-url`). The password is never part of `description`, which is what logs show.
public struct RedisURL: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var username: String?
    public var password: String?
    public var database: Int

    /// Nil for anything but a `redis://` URL with a host, a port from 1 to 65535 and a
    /// whole-number database; no query or fragment.
    public init?(_ text: String) {
        guard let parts = URLComponents(string: text), parts.scheme?.lowercased() == "redis",
              let host = parts.host, !host.isEmpty, parts.query == nil, parts.fragment == nil else { return nil }
        let port = parts.port ?? 6379
        guard (1...65535).contains(port) else { return nil }
        let path = parts.path.hasPrefix("/") ? String(parts.path.dropFirst()) : parts.path
        guard path.isEmpty || (path.allSatisfy(\.isASCII) && Int(path).map { $0 >= 0 } == true) else { return nil }
        self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        self.port = port
        username = parts.user.flatMap { $0.isEmpty ? nil : $0.removingPercentEncoding ?? $0 }
        password = parts.password.map { $0.removingPercentEncoding ?? $0 }
        database = Int(path) ?? 0
    }

    public var description: String {
        let login = password == nil ? (username.map { $0 + "@" } ?? "") : "\(username ?? ""):<redacted>@"
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "redis://\(login)\(shownHost):\(port)" + (database == 0 ? "" : "/\(database)")
    }
}
