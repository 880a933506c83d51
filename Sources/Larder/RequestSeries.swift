import CoreMetrics

/// `larder_http_requests_total` by route and status. Its route labels are the router's own
/// paths, plus `pass-through` for every path a pass-through route answers and `other` for
/// the rest; the series of common statuses are made once, so counting a request is an
/// array index and an atomic add, with no label strings built and no lock taken.
struct RequestSeries: Sendable {
    static let passThroughLabel = "pass-through"
    static let otherLabel = "other"
    private static let commonStatuses = [200, 304, 400, 404, 405, 408, 413, 414, 431, 500, 502, 503, 504]

    /// One route label, as an index into the tables.
    struct Route: Sendable {
        fileprivate let index: Int
    }

    private let labels: [String]
    private let index: [Substring: Int]
    /// counters[route][status index]
    private let counters: [[CoreMetrics.Counter]]
    private let counter: @Sendable (_ route: String, _ status: Int) -> CoreMetrics.Counter

    init(routes: [String], counter: @escaping @Sendable (_ route: String, _ status: Int) -> CoreMetrics.Counter) {
        labels = routes + [Self.passThroughLabel, Self.otherLabel]
        index = Dictionary(labels.enumerated().map { (Substring($1), $0) }, uniquingKeysWith: { first, _ in first })
        counters = labels.map { route in Self.commonStatuses.map { counter(route, $0) } }
        self.counter = counter
    }

    /// The route a request counts under; `passThrough` says whether a pass-through route covers its path.
    func route(of path: Substring, passThrough: Bool) -> Route {
        if let known = index[path] { return Route(index: known) }
        return Route(index: labels.count - (passThrough ? 2 : 1))
    }

    func label(_ route: Route) -> String { labels[route.index] }

    func count(_ route: Route, status: Int) {
        if let column = Self.commonStatuses.firstIndex(of: status) {
            counters[route.index][column].increment()
        } else {
            counter(labels[route.index], status).increment()
        }
    }
}
