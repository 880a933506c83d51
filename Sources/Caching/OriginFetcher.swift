/// One request for an origin behind a pass-through route: method, full URL, the request's
/// end-to-end header fields and its body.
public struct OriginRequest: Sendable {
    public var method: String
    public var url: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]?

    public init(method: String, url: String, headers: [(name: String, value: String)], body: [UInt8]? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// An origin as the shared cache sees it: any method, any status back. The service
/// implements it on libcurl; tests implement it with a scripted fake.
public protocol OriginFetcher: Sendable {
    /// The origin's answer as a `CacheEntry`, whatever its status; throws `FetchError` when
    /// no answer arrived (timeout, refused, connection dropped).
    func forward(_ request: OriginRequest) async throws -> CacheEntry
}
