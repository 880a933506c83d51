/// What a route does with a client's demand to refresh a fresh stored answer (`no-cache`,
/// `max-age=0`, `min-fresh`, `Pragma: no-cache`): browsers send `max-age=0` on every reload,
/// so one busy client could send every request to the origin. RFC 9111 honours them; nginx
/// and Varnish ignore them by default; between the two, at most one per key per interval.
public enum ClientRefresh: Sendable, Hashable, CustomStringConvertible {
    /// Every forced refresh goes to the upstream (RFC 9111 exactly).
    case honour
    /// At most one per key within the interval (seconds); the others get the stored answer.
    case limit(Double)
    /// None goes to the upstream: the stored answer is served while it is fresh.
    case ignore

    /// The configuration file's words: `honour` (or `honor`), `ignore`, or a duration for a limit.
    public var description: String {
        switch self {
        case .honour: "honour"
        case .ignore: "ignore"
        case .limit(let seconds): "limit \(seconds.formatted())s"
        }
    }
}

private extension Double {
    func formatted() -> String { rounded() == self ? String(Int(self)) : String(self) }
}
