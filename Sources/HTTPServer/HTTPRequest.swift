/// One parsed request, as the handler sees it: method, target split into path and query,
/// version, header fields (repeats kept) and the decoded body.
public struct HTTPRequest: Sendable {
    public var method: HTTPMethod
    /// The request target as sent (origin-form, absolute-form or `*`).
    public var target: String
    /// The path part of the target, percent-encoding left as sent.
    public var path: Substring { target[..<(target.firstIndex(of: "?") ?? target.endIndex)] }
    /// The query part after `?`, without the `?`; nil when the target has none.
    public var query: Substring? {
        guard let mark = target.firstIndex(of: "?") else { return nil }
        return target[target.index(after: mark)...]
    }
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(method: HTTPMethod, target: String, version: HTTPVersion = .http11,
                headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.body = body
    }

    /// Whether the connection stays open after this request (RFC 9112 §9.3).
    public var keepAlive: Bool {
        let tokens = headers.listValues("connection")
        func has(_ token: String) -> Bool { tokens.contains { $0.lowercased() == token } }
        switch version {
        case .http11: return !has("close")
        case .http10: return has("keep-alive") && !has("close")
        }
    }
}

/// The two HTTP/1 versions this server speaks; anything else is answered with 505.
public enum HTTPVersion: Sendable, Equatable {
    case http10, http11

    public var description: String { self == .http10 ? "HTTP/1.0" : "HTTP/1.1" }
}
