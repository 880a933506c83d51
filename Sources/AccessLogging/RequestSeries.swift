import HTTPCore
public import CacheVocabulary
import Locking
import Synchronization
import Observability

/// The series every request touches: `larder_http_requests_total` by route and status and
/// `larder_http_request_duration_seconds` by route and cache result. Kept in fixed tables of
/// atomic cells made once at start, one stripe per event loop, so recording is an index and
/// an atomic add to the loop's own cache lines (no label strings, no lock, no hash), and
/// summed and written out at scrape time with only the series that have counted something
/// (no wall of zeros), but for the stale answers of the routes the cache answers: an alert
/// reads those, and a series that first appears at 1 shows it no increase.
/// Measured (`larder-bench pieces`, the `RequestSeries` row of docs/performance.md): 9.0 ns
/// per request against 1,345.5 ns through swift-prometheus's registry (a counter and a
/// duration histogram looked up by labels). So these series, with the lookup and aggregate
/// part counters (`StripedCounters`), stay outside the swift-metrics facade the other series
/// go through: the facade's handles are made per label set, and a request's status is known
/// only when it is answered, so each request would look its handles up by labels, under the
/// backend's lock, on a path the performance gate holds at 17,829 instructions per memory
/// hit (`scripts/gate`).
///
/// Route labels are bounded: `pass-through` and `other` first, then the router's own paths,
/// then the labels configuration gives (each pass-through route's prefix, an aggregate a
/// reload added), resolved when the routes are made (`configure`), never per request. Only
/// the routes serving now have series in `/metrics`: a label a reload removes leaves it, and
/// its slot is taken again, emptied, once all `addedLabelLimit` are in use, so reloads that
/// come and go keep both the tables and the exposition bounded. Past the limit at once, a
/// route counts as `pass-through`.
public final class RequestSeries: Sendable {
    static let passThroughLabel = "pass-through"
    static let otherLabel = "other"
    /// Labels configuration may add over the whole process, past those at start.
    public static let addedLabelLimit = 64
    static let statuses = 100...599
    /// Upper bounds of the duration buckets, in seconds.
    static let bounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// One route label, as an index into the tables.
    public struct Route: Sendable, Equatable {
        fileprivate let index: Int
        /// A path a pass-through route covers, when its route has no label of its own.
        public static let passThrough = Route(index: 0)
        static let other = Route(index: 1)
        static let firstRouted = 2
    }

    /// A histogram's cells: one per bucket (not cumulative), then the count, then the sum in nanoseconds.
    private static let histogramWidth = bounds.count + 3

    /// `pass-through`, `other`, then `routes`: fixed, read per logged line without a lock.
    private let labels: [String]
    /// Labels configuration added, at indexes from `labels.count` on, and which labels the
    /// routes serving now do not have.
    private let added: Locked<Added>
    /// Positions in `routes` of the paths configuration gave (the aggregates at start), which a reload may remove.
    private let removable: [Int]
    /// Bits by position in `routes` (the first 64) of the removable paths not served now: a
    /// request to one counts as an unrouted path does. Read per request, so no lock.
    private let unservedBits = Atomic<UInt64>(0)

    private struct Added {
        /// The label of each added slot.
        var labels: [String] = []
        /// Added slots whose label no route serving now has, the one let go longest ago first.
        var idle: [Int] = []
        /// Positions in `routes` of removable paths not served now.
        var unserved: Set<Int> = []
    }
    /// Indexes into `labels` of the routes whose stale series are written out from the start
    /// (every added label is one: they are all cached routes).
    private let cached: Set<Int>
    /// The routes' own paths, in the order a router numbers them (`Router.paths`).
    public let routes: [String]
    /// Both tables flat and striped per loop, so a request costs two indexes and adds to
    /// its own loop's cache lines: `requests[route][status]` at `route * statuses.count +
    /// status − 100`, `durations[route][result][cell]` at `(route * results + result) *
    /// histogramWidth + cell`.
    private let requests: StripedCounters
    private let durations: StripedCounters
    /// The bucket bounds in nanoseconds, compared with a duration without a Double.
    private let boundsNanoseconds: [Int]

    /// `removable`: the paths among `routes` that configuration gave, which a reload may remove.
    package init(routes: [String], cached: [String] = [], removable: [String] = []) {
        self.routes = routes
        let labels = [Self.passThroughLabel, Self.otherLabel] + routes
        self.labels = labels
        added = Locked(Added())
        self.removable = removable.compactMap { routes.firstIndex(of: $0) }
        self.cached = Set(cached.compactMap { labels.firstIndex(of: $0) })
        let slots = labels.count + Self.addedLabelLimit
        requests = StripedCounters(count: slots * Self.statuses.count)
        durations = StripedCounters(count: slots * CacheOutcome.allCases.count * Self.histogramWidth)
        boundsNanoseconds = Self.bounds.map { Int(($0 * 1e9).rounded()) }
    }

    /// The route a request counts under: the position in `routes` of the path the router
    /// matched (`Router.handle(_:matchedPath:)`), else what `unrouted` says (the route that
    /// covers its path), else `other`.
    @_spi(Bench) public func route(matched: Int?, unrouted: @autoclosure () -> Route?) -> Route {
        if let matched, routes.indices.contains(matched), matched >= 64 || unservedBits.load(ordering: .relaxed) & (1 << matched) == 0 {
            return Route(index: matched + Route.firstRouted)
        }
        return unrouted() ?? .other
    }

    /// The slots of the labels of the routes about to serve (pass-through prefixes, aggregate
    /// paths), and every other label configuration gave let go: its series leave `/metrics`.
    /// A label keeps its slot, and its counts, while it serves and until its slot is taken
    /// again; a new one takes the router's slot when the router has the path, else a free
    /// slot, else the one let go longest ago, emptied (a request still in flight on the
    /// removed route may count there); `pass-through` when all `addedLabelLimit` serve.
    public func configure(_ configured: [String]) -> [String: Route] {
        let serving = Set(configured)
        return added.withLock { added in
            added.unserved = Set(removable.filter { !serving.contains(routes[$0]) })
            unservedBits.store(added.unserved.reduce(0) { $1 < 64 ? $0 | 1 << $1 : $0 }, ordering: .relaxed)
            added.idle.removeAll { serving.contains(added.labels[$0]) }
            for slot in added.labels.indices where !serving.contains(added.labels[slot]) && !added.idle.contains(slot) {
                added.idle.append(slot)
            }
            var given: [String: Route] = [:]
            for label in configured where given[label] == nil { given[label] = slot(for: label, &added) }
            return given
        }
    }

    private func slot(for label: String, _ added: inout Added) -> Route {
        if let index = labels.firstIndex(of: label) { return Route(index: index) }
        if let slot = added.labels.firstIndex(of: label) { return Route(index: labels.count + slot) }
        if added.labels.count < Self.addedLabelLimit {
            added.labels.append(label)
            return Route(index: labels.count + added.labels.count - 1)
        }
        guard !added.idle.isEmpty else { return .passThrough }
        let slot = added.idle.removeFirst()
        added.labels[slot] = label
        let route = labels.count + slot
        requests.zero(requestCell(route: route, offset: 0)..<requestCell(route: route + 1, offset: 0))
        durations.zero(durationsStart(route: route, result: 0)..<durationsStart(route: route + 1, result: 0))
        return Route(index: route)
    }

    func label(_ route: Route) -> String {
        if route.index < labels.count { return labels[route.index] }
        return added.withLock { $0.labels[route.index - labels.count] }
    }

    /// Counts one answered request and its duration.
    @_spi(Bench) public func record(_ route: Route, status: Int, result: CacheOutcome, nanoseconds: Int) {
        if Self.statuses.contains(status) { requests.add(requestCell(route: route.index, offset: status - Self.statuses.lowerBound)) }
        let first = durationsStart(route: route.index, result: Int(result.counted.rawValue))
        var bucket = 0
        while bucket < boundsNanoseconds.count, nanoseconds > boundsNanoseconds[bucket] { bucket += 1 }
        durations.add(first + bucket)
        durations.add(first + Self.bounds.count + 1)
        durations.add(first + Self.bounds.count + 2, nanoseconds)
    }

    /// Counts an answer the server gave before any route heard of its request: under
    /// `other`, with no duration (it was never the routes' to time).
    public func recordRefusal(status: Int) {
        if Self.statuses.contains(status) { requests.add(requestCell(route: Route.other.index, offset: status - Self.statuses.lowerBound)) }
    }

    private func requestCell(route: Int, offset: Int) -> Int { route * Self.statuses.count + offset }

    private func durationsStart(route: Int, result: Int) -> Int { (route * CacheOutcome.allCases.count + result) * Self.histogramWidth }

    private func durationCells(route: Int, result: Int) -> [Int] {
        let first = durationsStart(route: route, result: result)
        return (first..<(first + Self.histogramWidth)).map { durations[$0] }
    }

    // MARK: Exposition

    /// The text exposition of these families, series that counted nothing left out.
    package func render() -> String {
        var text = ""
        var lines: [String] = []
        let fixed = self.labels
        let (labels, hidden) = self.added.withLock { added in
            (fixed + added.labels, Set(added.unserved.map { $0 + Route.firstRouted } + added.idle.map { $0 + fixed.count }))
        }
        let shown = labels.indices.filter { !hidden.contains($0) }
        for route in shown {
            for offset in 0..<Self.statuses.count {
                let count = requests[requestCell(route: route, offset: offset)]
                guard count > 0 else { continue }
                lines.append("\(MetricFamily.httpRequests.name){route=\"\(labels[route])\",status=\"\(Self.statuses.lowerBound + offset)\"} \(count)")
            }
        }
        MetricFamily.httpRequests.write(type: "counter", lines, into: &text)

        lines = []
        for route in shown {
            for result in CacheOutcome.allCases.indices {
                let cells = durationCells(route: route, result: result)
                let alerted = CacheOutcome.allCases[result] == .stale
                    && (cached.contains(route) || route >= self.labels.count)
                guard cells[Self.bounds.count + 1] > 0 || alerted else { continue }
                let labelSet = "route=\"\(labels[route])\",cache=\"\(CacheOutcome.allCases[result].label)\""
                var cumulative = 0
                for (bucket, bound) in Self.bounds.enumerated() {
                    cumulative += cells[bucket]
                    lines.append("\(MetricFamily.httpRequestDuration.name)_bucket{\(labelSet),le=\"\(bound)\"} \(cumulative)")
                }
                let count = cells[Self.bounds.count + 1]
                lines.append("\(MetricFamily.httpRequestDuration.name)_bucket{\(labelSet),le=\"+Inf\"} \(count)")
                lines.append("\(MetricFamily.httpRequestDuration.name)_sum{\(labelSet)} \(Double(cells[Self.bounds.count + 2]) / 1e9)")
                lines.append("\(MetricFamily.httpRequestDuration.name)_count{\(labelSet)} \(count)")
            }
        }
        MetricFamily.httpRequestDuration.write(type: "histogram", lines, into: &text)

        return text
    }
}

extension CacheOutcome {
    /// The histogram series it counts in: a stand-in is stale there (and a warning in the log).
    var counted: CacheOutcome { self == .standIn ? .stale : self }
    var label: String { String(describing: self) }
}
