public import HTTPCore
public import Bodies

/// One request as a route hands it to the cache.
public struct CacheRequest: Sendable {
    public var method: HTTPMethod
    /// What the route keys on within its own key space: a pass-through route's target (path
    /// and query as sent), or a built-in route's normalised resource (`52.52,13.41`).
    public var resource: String
    /// Where the upstream is asked: the origin's URL for the target. Empty for a built-in
    /// route, whose fetcher makes the upstream API's URL from the resource (only on a fetch).
    public var url: String
    /// The fields sent on to the upstream, and the ones `Vary` selects by: a pass-through
    /// route's end-to-end fields (hop-by-hop ones removed); none for a built-in route.
    public var headers: HTTPHeaders
    /// The client's content, sent on as it is: in memory, a file, or a stream still arriving.
    public var body: Body?
    /// The client's `Cache-Control` (and `Pragma`) directives.
    public var directives: RequestDirectives
    /// Whether the client sent `Authorization` (RFC 9111 §3.5).
    public var hasAuthorization: Bool

    /// GET and HEAD without content. A GET or HEAD with content is forwarded as it is,
    /// but its answer depends on that content: it is never answered from the cache,
    /// stored, or shared with another request.
    var isCacheable: Bool { (method == .get || method == .head) && !hasContent }
    var hasContent: Bool { !(body?.isEmpty ?? true) }
}

// The initialisers live in an extension so that the memberwise one exists and they build the
// value in one step: assigned property by property on the stack, the whole request was copied
// once more there (a retain and a release of each field) on every request.
extension CacheRequest {
    /// A request relayed as the client sent it; its directives are read from its fields.
    public init(method: HTTPMethod, resource: String, url: String, headers: HTTPHeaders, body: Body? = nil) {
        self.init(method: method, resource: resource, url: url, headers: headers, body: body,
                  directives: RequestDirectives(cacheControl: headers.values("cache-control"), pragma: headers.values("pragma")),
                  hasAuthorization: headers.contains("authorization"))
    }

    /// A built-in route's GET of `resource`: nothing of the client's is sent upstream, only
    /// its directives count.
    public init(resource: String, url: String = "", directives: RequestDirectives) {
        self.init(method: .get, resource: resource, url: url, headers: [], body: nil, directives: directives, hasAuthorization: false)
    }
}
