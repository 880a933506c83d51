public import Foundation
import HTTPCore
public import CacheVocabulary

/// What one route's cache allows: which upstream statuses are answers, which storage rule
/// applies, the lifetime used when the upstream gives none, and the stale windows used when
/// the upstream names none. Built-in routes and pass-through routes run the same `Cache`;
/// only their policies differ.
public struct CachePolicy: Sendable {
    /// Freshness when the upstream gives no `max-age`, `s-maxage` or `Expires`; nil for none.
    public var defaultLifetime: TimeInterval?
    /// The same by status (a pass-through route's `lifetime`), ahead of `defaultLifetime` and
    /// of a heuristic; a status listed here may be stored without a lifetime of the origin's.
    public var defaultLifetimes: [Int: TimeInterval] = [:]
    /// How long past freshness an answer is served at once while one background refresh runs.
    public var staleWhileRevalidate: TimeInterval
    /// How long past freshness an answer is served when the upstream fails; 0 = never.
    public var staleIfError: TimeInterval
    /// Upstream statuses that are answers; nil for every status (a gateway passes each on).
    /// Any other status is an upstream failure: never stored, and a stale answer may stand in.
    public var answerStatuses: Set<Int>?
    /// Whether a response without explicit freshness gets a heuristic lifetime (RFC 9111 §4.2.2).
    public var heuristicFreshness: Bool
    /// Which answers may be kept.
    public var storage: StorageRule
    /// What a client-forced refresh (`no-cache`, `max-age`, `min-fresh` on a fresh stored
    /// answer) does: reaches the upstream, at most once per key per interval (the others get
    /// the stored answer, marked `refresh-limited`), or never (`refresh-ignored`).
    public var clientRefresh: ClientRefresh
    /// The largest body stored; a larger answer is relayed and not stored (`detail=too-large`).
    public var maxObjectSize = Int.max

    public init(defaultLifetime: TimeInterval?, staleWhileRevalidate: TimeInterval = 0, staleIfError: TimeInterval = 0,
                answerStatuses: Set<Int>? = [200], heuristicFreshness: Bool = false,
                storage: StorageRule = .decodedAnswers(storesPrivate: false), refreshMinInterval: TimeInterval = 0) {
        self.defaultLifetime = defaultLifetime
        self.staleWhileRevalidate = staleWhileRevalidate
        self.staleIfError = staleIfError
        self.answerStatuses = answerStatuses
        self.heuristicFreshness = heuristicFreshness
        self.storage = storage
        self.clientRefresh = refreshMinInterval > 0 ? .limit(refreshMinInterval) : .honour
    }

    /// A shared cache in front of any origin (pass-through routes): every status is passed
    /// on, storage follows RFC 9111 §3, and lifetimes are only what the origin says, plus
    /// heuristics; no default lifetime and no stale windows of its own.
    public static let sharedCache = CachePolicy(defaultLifetime: nil, answerStatuses: nil, heuristicFreshness: true,
                                                storage: .sharedCache)

    func isAnswer(_ status: Int) -> Bool { answerStatuses?.contains(status) ?? true }

    /// Whether a stored response may stand in when the origin cannot be reached at all and
    /// no stale-if-error window covers it (RFC 9111 §4.2.4): a gateway's choice, not a built-in route's.
    var servesDisconnected: Bool { storage == .sharedCache }
}
