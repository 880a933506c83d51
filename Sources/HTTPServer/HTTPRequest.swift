public import HTTPCore
public import Bodies
/// One parsed request, as the handler sees it: method, target split into path and query,
/// version, header fields (repeats kept) and the decoded body.
public struct HTTPRequest: Sendable {
    public var method: HTTPMethod
    /// The request target as sent (origin-form, absolute-form or `*`).
    public var target: String {
        didSet { (path, query) = Self.split(target) }
    }
    /// The path part of the target, percent-encoding left as sent.
    public private(set) var path: Substring
    /// The query part after `?`, without the `?`; nil when the target has none.
    public private(set) var query: Substring?

    /// Path and query, split once on the bytes (every route and log line reads them). The
    /// parts are cut at UTF-8 offsets: `?` is ASCII, so both cuts fall on scalar boundaries.
    static func split(_ target: String) -> (Substring, Substring?) {
        var text = target
        guard let offset = text.withUTF8({ $0.firstIndex(of: UInt8(ascii: "?")) }) else { return (target[...], nil) }
        let utf8 = target.utf8
        let mark = utf8.index(utf8.startIndex, offsetBy: offset)
        return (Substring(utf8[..<mark]), Substring(utf8[utf8.index(after: mark)..<utf8.endIndex]))
    }
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    /// In memory up to the server's held limit; past it (with a spool directory set) a file,
    /// or a stream still arriving when the request was dispatched at the end of its head.
    public var body: Body
    /// The client's IP address (for access logs); empty when it is not known.
    public var clientAddress = ""

    /// Whether the connection stays open after this request (RFC 9112 §9.3): decided once,
    /// from the version and `Connection`, when the request is parsed or made.
    public var keepAlive: Bool

    /// RFC 9112 §9.3, the one place the rule lives: HTTP/1.1 persists unless `close` is
    /// asked; HTTP/1.0 only when `keep-alive` is asked and `close` is not.
    static func keepAlive(version: HTTPVersion, close: Bool, keepAlive: Bool) -> Bool {
        version == .http11 ? !close : keepAlive && !close
    }

    static func keepAlive(version: HTTPVersion, headers: HTTPHeaders) -> Bool {
        let tokens = headers.listValues("connection").map { $0.lowercased() }
        return keepAlive(version: version, close: tokens.contains("close"), keepAlive: tokens.contains("keep-alive"))
    }
}

/// The two HTTP/1 versions this server speaks; anything else is answered with 505.
public enum HTTPVersion: Sendable, Equatable {
    case http10, http11

    public var description: String { self == .http10 ? "HTTP/1.0" : "HTTP/1.1" }
}

// The initialisers live in an extension so that the memberwise one exists and the parser's
// request is built in one step: assigned property by property on the stack, the whole request
// was copied once more there (a retain and a release of each field) on every request.
extension HTTPRequest {
    public init(method: HTTPMethod, target: String, version: HTTPVersion = .http11,
                headers: HTTPHeaders = HTTPHeaders(), body: Body = .empty) {
        self = .parsed(method: method, target: target, version: version, headers: headers, body: body,
                       keepAlive: Self.keepAlive(version: version, headers: headers))
    }

    /// A parsed request, whose connection rule the parser has already read from its fields.
    static func parsed(method: HTTPMethod, target: String, version: HTTPVersion, headers: HTTPHeaders, body: Body, keepAlive: Bool) -> HTTPRequest {
        let (path, query) = split(target)
        return HTTPRequest(method: method, target: target, path: path, query: query, version: version, headers: headers, body: body,
                           keepAlive: keepAlive)
    }
}
