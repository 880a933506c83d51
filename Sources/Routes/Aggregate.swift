import Caching
import HTTPCore
import HTTPServer
import Observability
import Settings

/// An aggregate of this Larder (`/overview`, or one a configuration file declares): one
/// path answered with the JSON of several parts, each a request to a built-in or
/// pass-through route looked up through that route's cache, in process and concurrently.
///
/// When every part is a memory hit the answer is made at once on the event loop thread;
/// otherwise the parts not in memory are looked up in Tasks, and the answer waits for them
/// until the deadline. A part still out then is missing (its fetch goes on and stores what
/// it gets), unless stale-if-error lets a stored answer stand in.
public struct Aggregate: Sendable {
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

    /// Nil when a part's target names no route here (the settings refuse such a file first).
    public init?(_ declaration: AggregateDeclaration, settings: ServeSettings, builtIns: [LarderRoutes.Mounted],
                 passThrough: PassThroughRoutes?, metrics: LarderMetrics) {
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
            parts.append(AggregatePart(declared, route: route, merge: declaration.merge,
                                       counters: metrics.aggregatePart(declaration.path, declared.name)))
        }
        path = declaration.path
        self.parts = parts
        merge = declaration.merge
        deadline = declaration.deadline ?? (parts.map { $0.upstreamTimeout(settings) }.max() ?? settings.upstreamTimeout) + .seconds(1)
        var parameters: [String] = []
        for part in parts { parameters += part.target.parameters.filter { !parameters.contains($0) } }
        self.parameters = parameters
        self.metrics = metrics
        isBuiltInOverview = declaration == .overview
    }

    public func handle(_ request: HTTPRequest) -> HTTPHandlerResult {
        let values: [String: Substring]
        switch Self.values(of: parameters, in: request.query) {
        case .success(let found): values = found
        case .failure(let problem): return .now(CachedResponse.badParameter(problem))
        }
        var base = request
        base.method = .get
        base.body = []
        base.headers = request.headers.filter { field in !AggregatePart.aggregateOnlyFields.contains { HTTPHeaders.namesEqual(field.name, $0) } }
        var lookups: [LarderRoutes.Part?] = []
        var endings: [AggregateAnswer.Ending?] = []
        var waiting = false
        for part in parts {
            var partRequest = base
            partRequest.target = part.requestTarget(values)
            switch part.lookup(partRequest) {
            case .success(let lookup):
                let inMemory = lookup.cache.answerFromMemory(lookup.request)
                lookups.append(inMemory == nil ? lookup : nil)
                endings.append(inMemory.map { .answered($0, late: false) })
                waiting = waiting || inMemory == nil
            case .failure(let refusal):
                // A bad parameter is the caller's to fix, whichever part found it.
                if refusal.response.status == 400 || part.required { return .now(refusal.response) }
                lookups.append(nil)
                endings.append(.refused(refusal.response))
            }
        }
        guard waiting else { return .now(answer(endings.map { $0! }, request: request)) }
        return .later { [self, endings, lookups] in
            let gathered = await Self.gather(lookups, deadline: deadline)
            var all: [AggregateAnswer.Ending] = []
            for (index, ending) in endings.enumerated() {
                if let ending {
                    all.append(ending)
                } else if let found = gathered[index] {
                    all.append(found)
                } else if let lookup = lookups[index], let standIn = await lookup.cache.standIn(for: lookup.request) {
                    all.append(.answered(standIn, late: true))
                } else {
                    all.append(.late)
                }
            }
            return answer(all, request: request)
        }
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
        return AggregateAnswer.response(parts, results, merge: merge, request: request)
    }

    /// Looks up each part given (the others are answered already) in its own Task, and
    /// returns what ended by the deadline; a part still out is nil, and its Task goes on.
    static func gather(_ lookups: [LarderRoutes.Part?], deadline: Duration) async -> [AggregateAnswer.Ending?] {
        var gathered = [AggregateAnswer.Ending?](repeating: nil, count: lookups.count)
        var outstanding = lookups.reduce(0) { $0 + ($1 == nil ? 0 : 1) }
        let (events, sink) = AsyncStream<(index: Int, ending: AggregateAnswer.Ending)?>.makeStream()
        for (index, lookup) in lookups.enumerated() {
            guard let lookup else { continue }
            Task {
                switch await lookup.cache.answer(lookup.request) {
                case .success(let answer): sink.yield((index, .answered(answer, late: false)))
                case .failure(let failure): sink.yield((index, .failed(failure)))
                }
            }
        }
        let timer = Task {
            try? await Task.sleep(for: deadline)
            sink.yield(nil)
        }
        for await event in events {
            guard let event else { break }
            gathered[event.index] = event.ending
            outstanding -= 1
            if outstanding == 0 { break }
        }
        timer.cancel()
        sink.finish()
        return gathered
    }

    /// The raw value of each parameter in the query, or every parameter missing or repeated.
    static func values(of names: [String], in query: Substring?) -> Result<[String: Substring], ParameterProblem> {
        guard !names.isEmpty else { return .success([:]) }
        var values: [String: Substring] = [:]
        var repeated: Set<String> = []
        for pair in (query ?? "").split(separator: "&") {
            let name = pair.prefix { $0 != "=" }
            guard let wanted = names.first(where: { $0 == name }) else { continue }
            if values[wanted] != nil { repeated.insert(wanted) }
            values[wanted] = pair.dropFirst(name.count + 1)
        }
        let errors = names.compactMap { name -> ProblemDetails.InputError? in
            if values[name] == nil { return .init(name: name, reason: "\(name) is required.") }
            if repeated.contains(name) { return .init(name: name, reason: "\(name) must be given once.") }
            return nil
        }
        return errors.isEmpty ? .success(values) : .failure(ParameterProblem(errors: errors))
    }
}
