import Caching
import HTTPCore
import CacheVocabulary
import Bodies
import LoopGuests
public import HTTPServer
public import ServiceMetrics
public import Settings

/// An aggregate of this Larder (`/overview`, or one a configuration file declares): one
/// path answered with the JSON of several parts, each a request to a built-in or
/// pass-through route looked up through that route's cache, in process and concurrently.
///
/// When every part is a memory hit the answer is made at once on the event loop thread;
/// otherwise the parts not in memory are looked up in Tasks, and the answer waits for them
/// until the deadline. A part still out then is missing (its fetch goes on and stores what
/// it gets), unless stale-if-error lets a stored answer stand in.
///
/// A class: the router's closure and every request's Task hold it, and a struct of its
/// fields was copied, and each of them retained, on every request.
public final class Aggregate: Sendable {
    public let path: String
    let parts: [AggregatePart]
    let merge: Bool
    let deadline: Duration
    /// The aggregate's query parameters its parts use, each required once.
    let parameters: [String]
    let metrics: LarderMetrics
    /// Whether this is the `/overview` every Larder with both built-in routes serves, which
    /// the OpenAPI document describes as written.
    let isBuiltInOverview: Bool
    let bodies = AggregateBodies()
    let partRequests: PartRequests

    /// Nil when a part's target names no route here (the settings refuse such a file first).
    public init?(_ declaration: AggregateDeclaration, settings: ServeSettings, builtIns: [LarderRoutes.Mounted],
                 passThrough: PassThroughRoutes?, metrics: LarderMetrics) {
        var parameters: [String] = []
        for part in declaration.parts { parameters += part.target.parameters.filter { !parameters.contains($0) } }
        var parts: [AggregatePart] = []
        for declared in declaration.parts {
            let target = declared.target.path
            let route: AggregatePart.Route
            if let mounted = builtIns.first(where: { $0.route.path == target }) {
                route = .builtIn(mounted)
            } else if let covering = passThrough?.routes.first(where: { $0.mount.covers(target[...]) }) {
                route = .passThrough(covering)
            } else {
                return nil
            }
            parts.append(AggregatePart(declared, route: route, merge: declaration.merge, parameters: parameters,
                                       counters: metrics.aggregatePart(declaration.path, declared.name)))
        }
        path = declaration.path
        self.parts = parts
        merge = declaration.merge
        deadline = declaration.deadline ?? (parts.map { $0.upstreamTimeout(settings) }.max() ?? settings.upstreamTimeout) + .seconds(1)
        self.parameters = parameters
        self.metrics = metrics
        isBuiltInOverview = declaration == .overview
        partRequests = PartRequests(readsClient: parts.contains { part in
            if case .passThrough(let route) = part.route { return route.mount.rules.forwardedFor }
            return false
        })
    }

    public func handle(_ request: HTTPRequest) -> HTTPHandlerResult {
        let located: PartRequests.Located
        if let known = partRequests.located(for: request) {
            located = known
        } else {
            switch locate(request) {
            case .success(let made): located = made
            case .failure(let refusal): return .now(refusal.response)
            }
        }
        // Each part's ending, or nil while its lookup (in `lookups`, at the same place) is out.
        var endings: [AggregateAnswer.Ending] = []
        var lookups: [LarderRoutes.Part?] = []
        endings.reserveCapacity(parts.count)
        for (part, location) in zip(parts, located) {
            switch location {
            case .success(let lookup):
                if let inMemory = lookup.cache.answerFromMemory(lookup.request) {
                    endings.append(.answered(inMemory, late: false))
                } else {
                    // Made only when some part waits: an aggregate of memory hits needs none.
                    if lookups.isEmpty { lookups = [LarderRoutes.Part?](repeating: nil, count: parts.count) }
                    lookups[endings.count] = lookup
                    endings.append(.late)
                }
            case .failure(let refusal):
                // A bad parameter is the caller's to fix, whichever part found it.
                if refusal.response.status == 400 || part.required { return .now(refusal.response) }
                endings.append(.refused(refusal.response))
            }
        }
        guard !lookups.isEmpty else { return .now(answer(endings, request: request)) }
        return .later { [self, endings, lookups] in
            var endings = endings
            let gathered = await Self.gather(lookups, names: parts.map(\.name), deadline: deadline)
            for (index, lookup) in lookups.enumerated() {
                guard let lookup else { continue }
                if let found = gathered[index] {
                    endings[index] = found
                } else if let standIn = await lookup.cache.standIn(for: lookup.request) {
                    endings[index] = .answered(standIn, late: true)
                }
            }
            return answer(endings, request: request)
        }
    }

    /// What each part's route makes of its request, or the 400 that refuses the aggregate's
    /// query; kept for the next equal request when every part was located.
    private func locate(_ request: HTTPRequest) -> Result<PartRequests.Located, HTTPResponseError> {
        let values: [Substring]
        switch Self.values(of: parameters, in: request.query) {
        case .success(let found): values = found
        case .failure(let problem): return .failure(HTTPResponseError(CachedResponse.badParameter(problem)))
        }
        var base = request
        base.method = .get
        base.body = .empty
        func answeredHere(_ field: HTTPHeaders.Element) -> Bool {
            AggregatePart.aggregateOnlyFields.contains { HTTPHeaders.namesEqual(field.name, $0) }
        }
        // Filtered only when there is something to take out: most requests have none of them.
        if request.headers.contains(where: answeredHere) { base.headers = request.headers.filter { !answeredHere($0) } }
        let located = parts.map { part in
            var partRequest = base
            partRequest.target = part.requestTarget(values)
            return part.lookup(partRequest)
        }
        partRequests.keep(located, for: request)
        return .success(located)
    }

    /// The request target of each part for the aggregate's query (the admin API purges what
    /// an aggregate's target names through them), or the parameters missing or repeated.
    public func partTargets(for query: Substring?) -> Result<[String], ParameterProblem> {
        Self.values(of: parameters, in: query).map { values in parts.map { $0.requestTarget(values) } }
    }

    private func answer(_ endings: [AggregateAnswer.Ending], request: HTTPRequest) -> HTTPResponse {
        let results = zip(parts, endings).map { AggregateAnswer.result(of: $0, $1, deadline: deadline) }
        for (part, result) in zip(parts, results) {
            if let status = result.status, result.shaped != nil {
                metrics.lookup(status)
                part.counters.answered(status.result)
            } else {
                part.counters.missed()
            }
        }
        return AggregateAnswer.response(parts, results, merge: merge, bodies: bodies, request: request)
    }

    /// Looks up each part given (the others are answered already) in its own Task, and
    /// returns what ended by the deadline; a part still out is nil, and its Task goes on.
    /// The Tasks run on the loop that took the request, as its deadline does: on the global
    /// pool, a pool kept busy by other work made parts whose answers had arrived miss the
    /// deadline (an unstructured Task does not inherit the loop as its executor).
    static func gather(_ lookups: [LarderRoutes.Part?], names: [String] = [], deadline: Duration) async -> [AggregateAnswer.Ending?] {
        var gathered = [AggregateAnswer.Ending?](repeating: nil, count: lookups.count)
        var outstanding = lookups.reduce(0) { $0 + ($1 == nil ? 0 : 1) }
        let (events, sink) = AsyncStream<(index: Int, ending: AggregateAnswer.Ending)?>.makeStream()
        for (index, lookup) in lookups.enumerated() {
            guard let lookup else { continue }
            Task(executorPreference: LoopExecutor.current) {
                switch await Self.answer(lookup, name: index < names.count ? names[index] : lookup.name) {
                case .success(let answer): sink.yield((index, .answered(answer, late: false)))
                case .failure(let failure): sink.yield((index, .failed(failure)))
                }
            }
        }
        // On a loop, the loop keeps the deadline (`LoopDeadlines`); elsewhere a sleeping Task
        // does, with no leeway: the deadline is a promise to the caller.
        var timer: Task<Void, Never>?
        if let reactor = LoopExecutor.reactor {
            LoopDeadlines.on(reactor).after(deadline) { sink.yield(nil) }
        } else {
            timer = Task {
                try? await Task.sleep(for: deadline, tolerance: .zero)
                sink.yield(nil)
            }
        }
        for await event in events {
            guard let event else { break }
            gathered[event.index] = event.ending
            outstanding -= 1
            if outstanding == 0 { break }
        }
        timer?.cancel()
        sink.finish()
        return gathered
    }

    /// The raw value of each parameter in the query, by position in `names`, or every
    /// parameter missing or repeated. One pass over the query's bytes, no dictionary: it
    /// runs for every request, hits included.
    static func values(of names: [String], in query: Substring?) -> Result<[Substring], ParameterProblem> {
        guard !names.isEmpty else { return .success([]) }
        let query = query ?? ""
        // Offsets found on the contiguous bytes, then cut from the query's UTF-8 view (`&`
        // and `=` are ASCII, so every cut falls on a scalar boundary): Character and view
        // indexing in the loop cost more than the rest of the aggregate's query work.
        var copy = query
        var offsets = [(start: Int, end: Int)](repeating: (-1, -1), count: names.count)
        var repeated = false
        copy.withUTF8 { bytes in
            var start = 0
            while start < bytes.count {
                var end = start
                var equals = -1
                while end < bytes.count, bytes[end] != UInt8(ascii: "&") {
                    if equals < 0, bytes[end] == UInt8(ascii: "=") { equals = end }
                    end += 1
                }
                let name = UnsafeBufferPointer(rebasing: bytes[start..<(equals < 0 ? end : equals)])
                if let index = names.firstIndex(where: { $0.utf8.elementsEqual(name) }) {
                    repeated = repeated || offsets[index].start >= 0
                    offsets[index] = (equals < 0 ? end : equals + 1, end)
                }
                start = end + 1
            }
        }
        if !repeated, !offsets.contains(where: { $0.start < 0 }) {
            let utf8 = query.utf8
            return .success(offsets.map { query[utf8.index(utf8.startIndex, offsetBy: $0.start)..<utf8.index(utf8.startIndex, offsetBy: $0.end)] })
        }
        // Counted again only to name each one: this is the 400's path.
        let errors = names.enumerated().compactMap { index, name -> ProblemDetails.InputError? in
            if offsets[index].start < 0 { return .init(name: name, reason: "\(name) is required.") }
            let given = query.split(separator: "&").filter { $0.prefix { $0 != "=" } == name }.count
            return given > 1 ? .init(name: name, reason: "\(name) must be given once.") : nil
        }
        return .failure(ParameterProblem(errors: errors))
    }
}
