import HTTPCore

/// What a handler answers: a response now, on the event loop thread (the cache-hit path),
/// or work to run in a Task whose response is posted back to the connection's loop.
public enum HTTPHandlerResult: Sendable {
    case now(HTTPResponse)
    case later(@Sendable () async -> HTTPResponse)
}

/// A request handler. It runs on an event loop thread, so it must not block.
public typealias HTTPHandler = @Sendable (HTTPRequest) -> HTTPHandlerResult

/// Exact path → handler per method. Unknown paths are 404 (or go to `fallback`), a known
/// path with another method is 405 with `Allow`; HEAD is served by the GET handler.
public struct Router: Sendable {
    private var routes = PathTable<[HTTPMethod: HTTPHandler]>()
    /// Handles paths with no route of their own (pass-through routes plug in here).
    public var fallback: HTTPHandler?

    public init() {}

    public mutating func add(_ method: HTTPMethod, _ path: String, _ handler: @escaping HTTPHandler) {
        var byMethod = routes[path] ?? [:]
        byMethod[method] = handler
        routes[path] = byMethod
    }

    public mutating func get(_ path: String, _ handler: @escaping HTTPHandler) {
        add(.get, path, handler)
    }

    /// Every path with a route of its own, sorted.
    public var paths: [String] { routes.paths.sorted() }

    /// Routes the request by its normalised path (`TargetPath`), which is also the target
    /// every handler sees: what is matched is what is keyed and forwarded.
    public func handle(_ request: HTTPRequest) -> HTTPHandlerResult {
        guard TargetPath.needsWork(request.target) else { return route(request) }
        guard let target = TargetPath.normalized(request.target) else {
            return .now(ProblemDetails(status: 400, detail: "The path climbs above the root or holds a malformed percent-escape.").response())
        }
        var normalized = request
        normalized.target = target
        return route(normalized)
    }

    private func route(_ request: HTTPRequest) -> HTTPHandlerResult {
        guard let byMethod = routes.value(at: request.path) else {
            if let fallback { return fallback(request) }
            return .now(ProblemDetails(status: 404, detail: "No resource at \(request.path).").response())
        }
        if let handler = byMethod[request.method] ?? (request.method == .head ? byMethod[.get] : nil) {
            return handler(request)
        }
        let allow = Self.allowed(byMethod.keys)
        return .now(ProblemDetails(status: 405, detail: "\(request.method) is not allowed on \(request.path); use \(allow).")
            .response(extraHeaders: [("Allow", allow)]))
    }

    static func allowed(_ methods: Dictionary<HTTPMethod, HTTPHandler>.Keys) -> String {
        var names = Set(methods.map(\.description))
        if names.contains("GET") { names.insert("HEAD") }
        let order = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
        return (order.filter(names.contains) + names.subtracting(order).sorted()).joined(separator: ", ")
    }

    /// The router as one handler, for `HTTPServer`.
    public var handler: HTTPHandler {
        let router = self
        return { router.handle($0) }
    }
}
