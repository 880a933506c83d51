import Foundation
import Caching
import HTTPCore
import HTTPServer
public import Routes
import Settings

/// Finds what the public port stores for a request target, by the public port's own rules:
/// the path normalised as its router does, a built-in route's parameters read by that
/// route's `locate` (so `lat=52.5201` names the stored `lat=52.52`), a pass-through target
/// under the longest prefix that covers it. An aggregate's target (`/overview?lat=…`) names
/// each of its parts.
public struct AdminTargets: Sendable {
    /// One stored resource: the cache it lives in and its resource there.
    struct Part: Sendable {
        let cache: Cache
        let resource: String
    }

    let builtIns: [LarderRoutes.Mounted]
    let passThrough: PassThroughRoutes?
    let aggregates: [String: Aggregate]

    public init(builtIns: [LarderRoutes.Mounted], passThrough: PassThroughRoutes?, aggregates: [String: Aggregate] = [:]) {
        self.builtIns = builtIns
        self.passThrough = passThrough
        self.aggregates = aggregates
    }

    /// A configured route that stores answers, named as `/metrics` names it.
    struct Store: Sendable {
        /// A built-in route's path or a pass-through route's prefix.
        let route: String
        /// `weather`, `balance`, or the origin's `scheme://host:port`.
        let upstream: String
        let cache: Cache
    }

    /// Every configured route that stores answers, built-in ones first, then by prefix.
    var stores: [Store] {
        builtIns.compactMap { mounted in mounted.cache.map { Store(route: mounted.route.path, upstream: mounted.route.name, cache: $0) } }
            + (passThrough?.routes ?? []).map { Store(route: $0.mount.prefix, upstream: OriginName.of($0.mount.origin), cache: $0.cache) }
                .sorted { $0.route < $1.route }
    }

    /// The parts a target names, or the problem response that says why it names none: 400
    /// for something that is not a path, 404 for a path where nothing can be stored (one the
    /// public port serves nothing at, or would refuse).
    func resolve(_ target: String) -> Result<[Part], HTTPResponseError> {
        // Bytes, not Characters: "/" followed by a combining mark or an emoji modifier is one
        // Character, and is still a path.
        guard target.utf8.first == UInt8(ascii: "/") else {
            return .failure(HTTPResponseError(ProblemDetails(
                status: 400, detail: "The target must be a path the public port serves, such as /weather?lat=52.52&lon=13.41.").response()))
        }
        guard let normalized = TargetPath.normalized(Self.asSentOnTheWire(target)) else {
            return .failure(Self.nothingStored("The public port refuses \(target): it climbs above the root or holds a malformed escape."))
        }
        let request = HTTPRequest(method: .get, target: normalized)
        if let aggregate = aggregates[String(request.path)] {
            switch aggregate.partTargets(for: request.query) {
            case .success(let targets):
                var parts: [Part] = []
                for part in targets {
                    switch resolvePart(HTTPRequest(method: .get, target: part)) {
                    case .success(let found): parts += found
                    case .failure(let refusal): return .failure(refusal)
                    }
                }
                return .success(parts)
            case .failure(let problem):
                return .failure(Self.nothingStored("The public port refuses \(target) with 400: \(problem.detail)"))
            }
        }
        return resolvePart(request)
    }

    /// What a built-in or pass-through route stores for a request.
    private func resolvePart(_ request: HTTPRequest) -> Result<[Part], HTTPResponseError> {
        let target = request.target
        if let mounted = builtIns.first(where: { $0.route.path == request.path }) {
            guard let cache = mounted.cache, let locate = mounted.route.locate else { return .success([]) }
            switch locate(request) {
            case .success(let resource): return .success([Part(cache: cache, resource: resource)])
            case .failure(let problem):
                return .failure(Self.nothingStored("The public port refuses \(target) with 400: \(problem.detail)"))
            }
        }
        if let route = passThrough?.routes.first(where: { $0.mount.covers(request.path) }) {
            return .success([Part(cache: route.cache, resource: route.mount.caching.keyTarget(target))])
        }
        return .failure(Self.nothingStored("The public port serves nothing at \(request.path)."))
    }

    /// The target as a client sends it to the public port: a byte a request line cannot
    /// carry raw (controls, space, non-ASCII) percent-encoded, so `/files/é` names what
    /// `GET /files/%C3%A9` stored.
    static func asSentOnTheWire(_ target: String) -> String {
        target.addingPercentEncoding(withAllowedCharacters: visibleASCII) ?? target
    }

    private static let visibleASCII = CharacterSet(charactersIn: Unicode.Scalar(0x21)...Unicode.Scalar(0x7E))

    private static func nothingStored(_ detail: String) -> HTTPResponseError {
        HTTPResponseError(ProblemDetails(status: 404, detail: detail + " Nothing can be stored there.").response())
    }
}
