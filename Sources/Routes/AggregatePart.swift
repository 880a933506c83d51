import Caching
import HTTPCore
import HTTPServer
import Observability
import Settings

/// One part of an aggregate, bound to the route of this Larder that answers it: how its
/// request is made from the aggregate's, which cache it asks, and what of its JSON is kept.
struct AggregatePart: Sendable {
    let name: String
    let target: PartTarget
    let required: Bool
    let route: Route
    let shape: PartShape
    let counters: AggregatePartCounters
    /// `"name":`, written before the part's JSON.
    let member: [UInt8]

    /// The route a part's target names, found once when the aggregate is built.
    enum Route: Sendable {
        case builtIn(LarderRoutes.Mounted)
        case passThrough(PassThroughRoutes.Route)
    }

    init(_ declared: AggregateDeclaration.Part, route: Route, merge: Bool, counters: AggregatePartCounters) {
        name = declared.name
        target = declared.target
        required = declared.required
        self.route = route
        var trusted = false
        if case .builtIn = route { trusted = true }
        shape = PartShape(pointer: declared.pointer, fields: declared.fields, trusted: trusted, merge: merge)
        self.counters = counters
        member = Array("\"\(declared.name)\":".utf8)
    }

    /// The fields of the aggregate's request a part's request does not carry: the
    /// conditions and ranges are the aggregate's own (answered from its whole body), and an
    /// encoded body could not be put inside another document.
    static let aggregateOnlyFields = ["if-none-match", "if-modified-since", "if-match", "if-unmodified-since", "if-range", "range",
                                      "accept-encoding", "content-length", "transfer-encoding", "expect"]

    /// The part's request target, with each placeholder replaced by its parameter's raw value.
    func requestTarget(_ values: [String: Substring]) -> String {
        var text = target.path
        guard !target.query.isEmpty else { return text }
        text.append("?")
        for piece in target.query {
            switch piece {
            case .text(let literal): text += literal
            case .parameter(let name): text += values[name] ?? ""
            }
        }
        return text
    }

    /// What the route makes of the part's request: its cache and the cache request, or the
    /// response that refuses it (a bad parameter, an upstream not configured).
    func lookup(_ request: HTTPRequest) -> Result<LarderRoutes.Part, HTTPResponseError> {
        switch route {
        case .builtIn(let mounted):
            do throws(HTTPResponseError) {
                return .success(try LarderRoutes.locate(mounted, request))
            } catch {
                return .failure(error)
            }
        case .passThrough(let passThrough):
            return .success(LarderRoutes.Part(name: name, cache: passThrough.cache,
                                              request: PassThroughRoutes.forwarded(request, mount: passThrough.mount)))
        }
    }

    /// Whether an answer of this part is for its caller only: a built-in route's by its
    /// audience, an origin's by its `private`.
    func isPrivate(_ answer: CacheAnswer) -> Bool {
        switch route {
        case .builtIn(let mounted): mounted.route.audience == .caller
        case .passThrough: answer.entry.cacheControl.isPrivate
        }
    }

    /// Whether an origin said its answer may not be reused as it is (`no-store`, `no-cache`).
    func forbidsReuse(_ answer: CacheAnswer) -> Bool {
        guard case .passThrough = route else { return false }
        return answer.entry.cacheControl.noStore || answer.entry.cacheControl.noCache
    }

    /// The upstream timeout of the part's route.
    func upstreamTimeout(_ settings: ServeSettings) -> Duration {
        switch route {
        case .builtIn: settings.upstreamTimeout
        case .passThrough(let passThrough): passThrough.mount.caching.timeout ?? settings.upstreamTimeout
        }
    }
}
