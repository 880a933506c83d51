public import HTTPCore

/// How a pass-through route rewrites a request on its way to the origin: its path prefix,
/// fields set or removed, `Via` and `X-Forwarded-For`. Set per route in a configuration
/// file; a route given by `--route` has the defaults.
public struct ForwardingRules: Sendable, Equatable {
    /// What replaces the route's prefix in the path sent to the origin: nil keeps the path
    /// as received, "" strips the prefix (`/api/x` → `/x`), `/v2` replaces it (`/v2/x`).
    public var prefixReplacement: String?
    /// Fields set on every forwarded request, replacing any the client sent (values may be
    /// secrets, read from `@/path` files, and are never printed).
    public var setFields = HTTPHeaders()
    /// Fields removed from every forwarded request.
    public var removeFields: [String] = []
    /// Whether `Via: 1.1 larder` is added (RFC 9110 §7.6.3: a gateway must send it).
    public var via = true
    /// Whether the client's address is added to `X-Forwarded-For`. Off by default: it makes
    /// requests of different clients differ, so they no longer share one upstream fetch.
    public var forwardedFor = false
    /// The largest request body this route takes; nil for `defaultMaxRequestBody`.
    public var maxRequestBody: Int?
    /// A pass-through route's body limit unless it sets one: uploads are relayed as they
    /// arrive, through a file, so a large limit costs disk while an upload lasts, not memory.
    public static let defaultMaxRequestBody = 64 << 20

    public init() {}

    /// The target sent for a request target under `prefix`.
    public func target(_ target: String, prefix: String) -> String {
        guard var replacement = prefixReplacement else { return target }
        // A prefix ending in `/` covers the paths after that slash; the slash stays.
        let kept = prefix.hasSuffix("/") ? prefix.utf8.count - 1 : prefix.utf8.count
        while replacement.hasSuffix("/") { replacement.removeLast() }
        let rewritten = replacement + String(decoding: target.utf8.dropFirst(kept), as: UTF8.self)
        return rewritten.hasPrefix("/") ? rewritten : "/" + rewritten
    }

    /// The fields sent, from the end-to-end fields of the client's request.
    public func fields(_ fields: HTTPHeaders, version: String, client: String) -> HTTPHeaders {
        guard via || forwardedFor || !setFields.isEmpty || !removeFields.isEmpty else { return fields }
        var fields = fields
        for name in removeFields { fields.remove(name) }
        for field in setFields { fields.set(field.name, field.value) }
        if via {
            let received = fields.values("via").joined(separator: ", ")
            fields.set("Via", received.isEmpty ? "\(version) larder" : "\(received), \(version) larder")
        }
        if forwardedFor, !client.isEmpty {
            let received = fields.values("x-forwarded-for").joined(separator: ", ")
            fields.set("X-Forwarded-For", received.isEmpty ? client : "\(received), \(client)")
        }
        return fields
    }
}
