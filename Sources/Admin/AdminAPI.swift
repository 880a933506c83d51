public import Caching
import Foundation
import HTTPCore
import Bodies
public import HTTPServer
public import Logging
import AccessLogging
import Routes
public import Settings

/// The admin listener's API (`--admin-port`), on a listener of its own so the public port
/// never serves it: `PURGE <target>` (or `DELETE /cache?target=`, the same in a method
/// every client and OpenAPI know), `POST /purge` by tags or everything, and
/// `GET /cache?target=` to see what is stored, `GET /routes` for what each configured route
/// stores, `POST /reload` to read the configuration
/// file again (as `SIGHUP` does), and `GET /readyz`: the public readiness with each origin's
/// URL and the upstream client's own words, which the public port never shows. Every request needs the bearer token, gets an
/// `X-Request-Id`, and leaves one audit line (`notice`; `warning` when refused for its
/// token) with the client, method, target, status, request id and, for a purge, what it
/// removed. The token itself is never logged.
public struct AdminAPI: Sendable {
    let token: BearerToken
    /// The public port's routes now (a reload may replace them).
    let targets: @Sendable () -> AdminTargets
    let purger: CachePurger
    let logger: Logger
    /// Reads the configuration again.
    let reload: @Sendable () async -> ReloadOutcome
    /// Readiness with the origins' details.
    let readiness: @Sendable () -> HTTPResponse

    public init(token: BearerToken, targets: @escaping @Sendable () -> AdminTargets, purger: CachePurger, logger: Logger,
                reload: @escaping @Sendable () async -> ReloadOutcome = { .unavailable("reload is not available") },
                readiness: @escaping @Sendable () -> HTTPResponse = { ProblemDetails(status: 404, detail: "No readiness here.").response() }) {
        self.token = token
        self.targets = targets
        self.purger = purger
        self.logger = logger
        self.reload = reload
        self.readiness = readiness
    }
    let requestIDs = RequestIDs()

    /// An operator's request now and then: every answer is made in a Task, plainly.
    public var handler: HTTPHandler {
        let api = self
        return { request in .later { await api.answer(request) } }
    }

    /// What one admin request gets, stamped with its request id and logged.
    func answer(_ request: HTTPRequest) async -> HTTPResponse {
        var (response, action) = await respond(request)
        let id = response.headers.add("X-Request-Id", requestIDs.id(for: request.headers["x-request-id"]).append)
        let refused = response.status == 401 || response.status == 403
        let did = action.map { ": " + $0 } ?? ""
        logger.log(level: refused ? .warning : .notice, "admin \(request.method) \(request.target) \(response.status)\(did)",
                   metadata: ["client": .string(request.clientAddress), "request_id": .string(String(decoding: response.headers.lines.bytes[id], as: UTF8.self)),
                              "status": .stringConvertible(response.status)])
        return response
    }

    /// The answer, and what it did to the cache (said in the audit line).
    private func respond(_ request: HTTPRequest) async -> (HTTPResponse, action: String?) {
        switch token.check(authorization: request.headers["authorization"]) {
        case .missing:
            return (ProblemDetails(status: 401, detail: "The admin API needs Authorization: Bearer with the admin token.")
                .response(extraHeaders: [("WWW-Authenticate", "Bearer realm=\"larder-admin\"")]), nil)
        case .wrong:
            return (ProblemDetails(status: 403, detail: "The bearer token is not the admin token.").response(), nil)
        case .right:
            break
        }
        switch (request.method, request.path) {
        case (.other("PURGE"), _):
            return await purge(target: request.target)
        case (.post, "/purge"):
            return await purge(body: request.body.inMemory ?? [])  // the admin listener spools nothing
        case (.post, "/reload"):
            return await reloadConfiguration()
        case (_, "/reload"):
            return (Self.notAllowed(request, allow: "POST"), nil)
        case (.get, "/readyz"):
            return (readiness(), nil)
        case (_, "/readyz"):
            return (Self.notAllowed(request, allow: "GET"), nil)
        case (.get, "/routes"):
            return (routes(request.query), nil)
        case (_, "/routes"):
            return (Self.notAllowed(request, allow: "GET"), nil)
        case (.get, "/cache"), (.head, "/cache"):
            return (await inspect(request.query), nil)
        case (.delete, "/cache"):
            guard let target = Self.target(in: request.query) else { return (Self.noTarget, nil) }
            return await purge(target: target)
        case (_, "/purge"):
            return (Self.notAllowed(request, allow: "POST"), nil)
        case (_, "/cache"):
            return (Self.notAllowed(request, allow: "GET, HEAD, DELETE"), nil)
        default:
            return (ProblemDetails(status: 404, detail: "The admin API has PURGE <target>, POST /purge, GET /cache, GET /routes, POST /reload and GET /readyz.").response(), nil)
        }
    }

    // MARK: Reload

    /// 200 with the settings that need a restart; 400 problem+json with one error per problem
    /// of the file (nothing changed); 409 when there is no file to read.
    private func reloadConfiguration() async -> (HTTPResponse, action: String?) {
        switch await reload() {
        case .refused(let problems):
            let errors = problems.map { ProblemDetails.InputError(name: "configuration", reason: $0) }
            return (ProblemDetails(status: 400, detail: "The configuration was not reloaded; nothing changed.", errors: errors).response(),
                    "reload refused (\(problems.count) problem(s))")
        case .unavailable(let reason):
            return (ProblemDetails(status: 409, detail: "Nothing was reloaded: \(reason).").response(), "reload unavailable")
        case .reloaded(let restartNeeded):
            let names = restartNeeded.map(JSONString.quote).joined(separator: ",")
            return (Self.json(200, "{\"reloaded\":true,\"restart_needed\":[\(names)]}"), "reloaded the configuration")
        }
    }

    // MARK: Purge

    private func purge(target: String) async -> (HTTPResponse, action: String?) {
        let parts: [AdminTargets.Part]
        switch targets().resolve(target) {
        case .failure(let refusal): return (refusal.response, nil)
        case .success(let resolved): parts = resolved
        }
        var purged = 0
        for part in parts { purged += await purger.purge(.key(part.cache.key(part.resource))) }
        return (Self.json(200, "{\"purged\":\(purged)}"), "purged \(target): removed \(purged) stored answer(s)")
    }

    private func purge(body: [UInt8]) async -> (HTTPResponse, action: String?) {
        guard let selection = Self.selection(body) else {
            return (ProblemDetails(status: 400, detail: "The body must be {\"tags\":[\"tag\", …]} with at least one tag, or {\"all\":true}.")
                .response(), nil)
        }
        let purged = await purger.purge(selection)
        let what = if case .tags(let tags) = selection { "tags " + tags.sorted().joined(separator: ", ") } else { "everything" }
        return (Self.json(200, "{\"purged\":\(purged)}"), "purged \(what): removed \(purged) stored answer(s)")
    }

    /// `{"tags":["a","b"]}` or `{"all":true}`, and nothing else (no other member, no member
    /// twice, no empty tag, no `1` for `true`).
    static func selection(_ body: [UInt8]) -> CachePurger.Selection? {
        guard let (value, names) = try? JSONValue.readingNames(body), names.count == 1, case .object(let members) = value else {
            return nil
        }
        switch (members["all"], members["tags"]) {
        case (.bool(true)?, nil):
            return .all
        case (nil, .array(let elements)?):
            let tags = elements.compactMap { element -> String? in
                guard case .string(let tag) = element, !tag.isEmpty else { return nil }
                return tag
            }
            return !tags.isEmpty && tags.count == elements.count ? .tags(Set(tags)) : nil
        default:
            return nil
        }
    }

    // MARK: Inspection

    /// The one `target` parameter of a query, percent-decoded.
    private static func target(in query: Substring?) -> String? {
        let values = parameter("target", in: query)
        return values.count == 1 ? values.first : nil
    }

    /// Every value of the parameter `name` in a query, percent-decoded (an undecodable one left out).
    private static func parameter(_ name: Substring, in query: Substring?) -> [String] {
        (query ?? "").split(separator: "&").compactMap { pair -> String? in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == name else { return nil }
            return String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
        }
    }

    /// `GET /routes`: each configured route that stores answers, with its upstream (both as
    /// `/metrics` labels them) and what its store holds in each tier; `route=` and
    /// `upstream=` (each at most once) keep the matching ones, 404 when none does.
    private func routes(_ query: Substring?) -> HTTPResponse {
        let (route, upstream) = (Self.parameter("route", in: query), Self.parameter("upstream", in: query))
        guard route.count <= 1, upstream.count <= 1 else {
            return ProblemDetails(status: 400, detail: "Give route= and upstream= at most once each, percent-encoded: /routes?route=%2Fapi.").response()
        }
        let all = targets().stores
        let chosen = all.filter { (route.first ?? $0.route) == $0.route && (upstream.first ?? $0.upstream) == $0.upstream }
        guard !chosen.isEmpty || (route.isEmpty && upstream.isEmpty) else {
            let known = all.map { "\($0.route) (\($0.upstream))" }.joined(separator: ", ")
            return ProblemDetails(status: 404, detail: "No configured route matches; the routes are \(known.isEmpty ? "none" : known).").response()
        }
        let holdings = Cache.holdings(of: chosen.map(\.cache))
        let items = chosen.map { store in
            let held = holdings[store.cache.route] ?? RouteHoldings()
            return "{\"route\":\(JSONString.quote(store.route)),\"upstream\":\(JSONString.quote(store.upstream)),"
                + "\"memory\":\(Self.json(held.memory)),\"disk\":\(Self.json(held.disk))}"
        }
        return Self.json(200, "{\"routes\":[\(items.joined(separator: ","))]}")
    }

    private static func json(_ held: TierHoldings) -> String { "{\"entries\":\(held.entries),\"bytes\":\(held.bytes)}" }

    private static var noTarget: HTTPResponse {
        ProblemDetails(status: 400, detail: "Give one target, percent-encoded: /cache?target=%2Fweather%3Flat%3D52.52%26lon%3D13.41.").response()
    }

    private func inspect(_ query: Substring?) async -> HTTPResponse {
        guard let target = Self.target(in: query) else { return Self.noTarget }
        let parts: [AdminTargets.Part]
        switch targets().resolve(target) {
        case .failure(let refusal): return refusal.response
        case .success(let resolved): parts = resolved
        }
        var stored: [String] = []
        for part in parts {
            for summary in await part.cache.stored(part.resource) { stored.append(Self.json(summary, route: part.cache.route)) }
        }
        guard !stored.isEmpty else {
            return ProblemDetails(status: 404, detail: "Nothing is stored for \(target).").response()
        }
        return Self.json(200, "{\"target\":\(JSONString.quote(target)),\"stored\":[\(stored.joined(separator: ","))]}")
    }

    static func json(_ summary: StoredSummary, route: String) -> String {
        let optional: (String?) -> String = { $0.map(JSONString.quote) ?? "null" }
        return "{\"route\":\(JSONString.quote(RedactedURL.text(route))),\"tiers\":[\(summary.tiers.map(JSONString.quote).joined(separator: ","))],"
            + "\"status\":\(summary.status),\"age\":\(summary.age),\"lifetime\":\(summary.lifetime),"
            + "\"etag\":\(optional(summary.etag)),\"lastModified\":\(optional(summary.lastModified)),"
            + "\"tags\":[\(summary.tags.map(JSONString.quote).joined(separator: ","))],\"size\":\(summary.size),"
            + "\"variant\":\(summary.isVariant)}"
    }

    // MARK: Responses

    static func json(_ status: Int, _ body: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: HTTPHeaders([("Content-Type", "application/json"), ("Cache-Control", "no-store")]), body: body)
    }

    private static func notAllowed(_ request: HTTPRequest, allow: String) -> HTTPResponse {
        ProblemDetails(status: 405, detail: "\(request.method) is not allowed on \(request.path); use \(allow).")
            .response(extraHeaders: [("Allow", allow)])
    }
}
