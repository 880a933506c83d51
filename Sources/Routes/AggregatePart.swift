import Caching
import HTTPCore
import Bodies
import HTTPServer
import ServiceMetrics
import Settings

/// One part of an aggregate, bound to the route of this Larder that answers it: how its
/// request is made from the aggregate's, which cache it asks, and what of its JSON is kept.
/// A class: every request passes its parts around, and copying a struct of this many fields
/// retained each one (an eighth of an aggregate's cost under perf).
final class AggregatePart: Sendable {
    let name: String
    let target: PartTarget
    /// The target's query with each placeholder as its position in the aggregate's parameters.
    let query: [Piece]
    let required: Bool
    let route: Route
    /// What the route makes of a part's request (`lookup`), made once from `route`: taking
    /// the route out of its enum on every request copied it, and retained each of its closures.
    private let locate: @Sendable (HTTPRequest) -> Result<LarderRoutes.Part, HTTPResponseError>
    /// Whether the route is a built-in one for its caller only (the balance).
    private let builtInForCaller: Bool
    private let isPassThrough: Bool
    let shape: PartShape
    let counters: AggregatePartCounters
    /// `"name":`, written before the part's JSON.
    let member: [UInt8]
    /// `name=`, which starts the part's member of `Larder-Parts`.
    let partsKey: [UInt8]

    /// The route a part's target names, found once when the aggregate is built.
    enum Route: Sendable {
        case builtIn(LarderRoutes.Mounted)
        case passThrough(PassThroughRoutes.Route)
    }

    enum Piece: Sendable {
        case text(String)
        case parameter(Int)
    }

    init(_ declared: AggregateDeclaration.Part, route: Route, merge: Bool, parameters: [String], counters: AggregatePartCounters) {
        name = declared.name
        target = declared.target
        query = declared.target.query.map { piece in
            switch piece {
            case .text(let text): .text(text)
            case .parameter(let name): .parameter(parameters.firstIndex(of: name)!)
            }
        }
        required = declared.required
        self.route = route
        switch route {
        case .builtIn(let mounted):
            locate = { request in
                do throws(HTTPResponseError) {
                    return .success(try LarderRoutes.locate(mounted, request))
                } catch {
                    return .failure(error)
                }
            }
            builtInForCaller = mounted.route.audience == .caller
            isPassThrough = false
        case .passThrough(let passThrough):
            locate = { [name = declared.name, cache = passThrough.cache, mount = passThrough.mount] request in
                .success(LarderRoutes.Part(name: name, cache: cache, request: PassThroughRoutes.forwarded(request, mount: mount)))
            }
            builtInForCaller = false
            isPassThrough = true
        }
        shape = PartShape(pointer: declared.pointer, fields: declared.fields, trusted: !isPassThrough, merge: merge)
        self.counters = counters
        member = Array("\"\(declared.name)\":".utf8)
        partsKey = Array("\(declared.name)=".utf8)
    }

    /// A part's answer is read as JSON only under this size, from the origin or from a
    /// cache alike: from it on, an origin's answer is streamed through a file on a miss (not
    /// held in memory), so a larger limit for stored answers would make an aggregate fail on
    /// a miss and succeed once the part is stored.
    static let largestAnswer = HeldAnswer.streamedFrom

    /// The fields of the aggregate's request a part's request does not carry: the
    /// conditions and ranges are the aggregate's own (answered from its whole body), and an
    /// encoded body could not be put inside another document.
    static let aggregateOnlyFields = ["if-none-match", "if-modified-since", "if-match", "if-unmodified-since", "if-range", "range",
                                      "accept-encoding", "content-length", "transfer-encoding", "expect"]

    /// The part's request target, with each placeholder replaced by its parameter's raw
    /// value (`values` by position in the aggregate's parameters).
    func requestTarget(_ values: [Substring]) -> String {
        guard !query.isEmpty else { return target.path }
        // As bytes, then one String: appending to a String piece by piece cost three times as much.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(target.path.utf8.count + 64)
        bytes += target.path.utf8
        bytes.append(UInt8(ascii: "?"))
        for piece in query {
            switch piece {
            case .text(let literal): bytes += literal.utf8
            case .parameter(let index): bytes += values[index].utf8
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// What the route makes of the part's request: its cache and the cache request, or the
    /// response that refuses it (a bad parameter, an upstream not configured).
    func lookup(_ request: HTTPRequest) -> Result<LarderRoutes.Part, HTTPResponseError> { locate(request) }

    /// Whether an answer of this part is for its caller only: a built-in route's by its
    /// audience, an origin's by the `private` its clients get, which Larder may have been
    /// told to ignore for itself.
    func isPrivate(_ answer: CacheAnswer) -> Bool {
        isPassThrough ? answer.entry.isPrivateDownstream : builtInForCaller
    }

    /// Whether an origin said its answer may not be reused as it is (`no-store`, `no-cache`).
    func forbidsReuse(_ answer: CacheAnswer) -> Bool {
        isPassThrough && (answer.entry.cacheControl.noStore || answer.entry.cacheControl.noCache)
    }

    /// The upstream timeout of the part's route.
    func upstreamTimeout(_ settings: ServeSettings) -> Duration {
        switch route {
        case .builtIn: settings.upstreamTimeout
        case .passThrough(let passThrough): passThrough.mount.caching.timeout ?? settings.upstreamTimeout
        }
    }
}
