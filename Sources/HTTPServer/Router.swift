public import HTTPCore

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
    private var routes = PathTable<MethodHandlers>()
    /// Each path's position in `paths` (sorted), by its position in `routes` (as added).
    private var sortedPositions: [Int] = []
    /// Handles paths with no route of their own (pass-through routes plug in here).
    public var fallback: HTTPHandler?

    public init() {}

    public mutating func add(_ method: HTTPMethod, _ path: String, _ handler: @escaping HTTPHandler) {
        var byMethod = routes[path] ?? MethodHandlers()
        byMethod[method] = handler
        routes[path] = byMethod
        let sorted = paths
        sortedPositions = routes.paths.map { sorted.firstIndex(of: $0)! }
    }

    public mutating func get(_ path: String, _ handler: @escaping HTTPHandler) {
        add(.get, path, handler)
    }

    /// Every path with a route of its own, sorted.
    public var paths: [String] { routes.paths.sorted() }

    /// Routes the request by its normalised path (`TargetPath`), which is also the target
    /// every handler sees: what is matched is what is keyed and forwarded.
    public func handle(_ request: HTTPRequest) -> HTTPHandlerResult {
        var path: Int?
        return handle(request, matchedPath: &path)
    }

    /// `handle`, also telling which route answered: `matchedPath` is set to the position in
    /// `paths` of the path that matched (after normalising), and left nil when none did (a
    /// fallback's answer, 404, or a refused target). Per-route tables (the request series)
    /// index by it, rather than looking the path up a second time.
    public func handle(_ request: HTTPRequest, matchedPath: inout Int?) -> HTTPHandlerResult {
        guard TargetPath.needsWork(request.target) else { return route(request, matchedPath: &matchedPath) }
        guard let target = TargetPath.normalized(request.target) else {
            return .now(ProblemDetails(status: 400, detail: "The path climbs above the root or holds a malformed percent-escape.").response())
        }
        var normalized = request
        normalized.target = target
        return route(normalized, matchedPath: &matchedPath)
    }

    private func route(_ request: HTTPRequest, matchedPath: inout Int?) -> HTTPHandlerResult {
        guard let index = routes.index(at: request.path) else {
            if let fallback { return fallback(request) }
            return .now(ProblemDetails(status: 404, detail: "No resource at \(request.path).").response())
        }
        matchedPath = sortedPositions[index]
        let byMethod = routes.value(atPosition: index)
        if let handler = byMethod.serving(request.method) {
            return handler(request)
        }
        return .now(Self.methodNotAllowed(request, allowing: byMethod.methods))
    }

    /// 405 with `Allow` for a path that serves only `methods` (GET brings HEAD): the router's
    /// own answer, and that of a handler that routes some paths itself.
    public static func methodNotAllowed(_ request: HTTPRequest, allowing methods: [HTTPMethod]) -> HTTPResponse {
        let allow = allowed(methods)
        return ProblemDetails(status: 405, detail: "\(request.method) is not allowed on \(request.path); use \(allow).")
            .response(extraHeaders: [("Allow", allow)])
    }

    static func allowed(_ methods: [HTTPMethod]) -> String {
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

/// The handlers of one path by method. A path has one to three, so comparing the method with
/// each costs less than hashing it (a hash per request was about 270 instructions).
struct MethodHandlers: Sendable {
    /// A struct, not a tuple: a closure in a tuple held by an array is kept at its most
    /// general form, and taking it out allocated a thunk per request.
    private struct Entry {
        let method: HTTPMethod
        let handler: HTTPHandler
    }

    private var entries: [Entry] = []

    subscript(method: HTTPMethod) -> HTTPHandler? {
        get {
            for entry in entries where entry.method == method { return entry.handler }
            return nil
        }
        set {
            entries.removeAll { $0.method == method }
            if let newValue { entries.append(Entry(method: method, handler: newValue)) }
        }
    }

    /// The handler that serves `method`: its own, or for HEAD the GET handler. Not `??`:
    /// its generic autoclosure wrapped the handler in a thunk, an allocation per request.
    func serving(_ method: HTTPMethod) -> HTTPHandler? {
        if let own = self[method] { return own }
        if method == .head { return self[.get] }
        return nil
    }

    var methods: [HTTPMethod] { entries.map(\.method) }
}
