import Foundation

/// What one kind of cached resource allows, configured per route: the lifetime used when
/// the upstream gives none, and the stale windows used when the upstream names none.
public struct CachePolicy: Sendable {
    /// Freshness when the upstream gives no `max-age`, `s-maxage` or `Expires`; nil for none.
    public var defaultLifetime: TimeInterval?
    /// How long past freshness an answer is served at once while one background refresh runs.
    public var staleWhileRevalidate: TimeInterval
    /// How long past freshness an answer is served when the upstream fails; 0 = never.
    public var staleIfError: TimeInterval
    /// Whether `Cache-Control: private` answers may be stored (true for a per-account resource).
    public var storesPrivate: Bool
    /// Upstream statuses that are answers; any other status is an upstream failure.
    public var answerStatuses: Set<Int>
    /// Whether a response without explicit freshness gets a heuristic lifetime (§4.2.2).
    public var heuristicFreshness: Bool

    public init(defaultLifetime: TimeInterval?, staleWhileRevalidate: TimeInterval = 0, staleIfError: TimeInterval = 0,
                storesPrivate: Bool = false, answerStatuses: Set<Int> = [200], heuristicFreshness: Bool = false) {
        self.defaultLifetime = defaultLifetime
        self.staleWhileRevalidate = staleWhileRevalidate
        self.staleIfError = staleIfError
        self.storesPrivate = storesPrivate
        self.answerStatuses = answerStatuses
        self.heuristicFreshness = heuristicFreshness
    }

    /// A shared cache in front of any origin (pass-through routes): only what the origin
    /// says, plus heuristics; no default lifetime and no stale windows of its own.
    public static let sharedCache = CachePolicy(defaultLifetime: nil, heuristicFreshness: true)
}
