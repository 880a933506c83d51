/// The `Cache-Status` value (RFC 9211) for one answer, built from what actually happened.
///
/// Examples: `larder; hit; ttl=3542; detail=memory`, `larder; fwd=miss; fwd-status=200; stored`,
/// `larder; fwd=stale; fwd-status=503; detail=stale-if-error`.
public struct CacheStatus: Sendable, Equatable, CustomStringConvertible {
    /// Why the cache went forward to the upstream (RFC 9211 §2.2).
    public enum Forward: String, Sendable {
        /// Nothing was stored.
        case miss
        /// Something was stored, but stale.
        case stale
        /// Something fresh was stored, but the request asked to go forward (no-cache, max-age, min-fresh).
        case request
        /// The method is never answered from the cache (anything but GET and HEAD).
        case method
    }

    public static let cacheName = "larder"

    public var hit = false
    public var forward: Forward?
    public var forwardStatus: Int?
    public var ttl: Int?
    public var stored = false
    public var collapsed = false
    public var detail: String?

    public init(hit: Bool = false, forward: Forward? = nil, forwardStatus: Int? = nil, ttl: Int? = nil,
                stored: Bool = false, collapsed: Bool = false, detail: String? = nil) {
        self.hit = hit
        self.forward = forward
        self.forwardStatus = forwardStatus
        self.ttl = ttl
        self.stored = stored
        self.collapsed = collapsed
        self.detail = detail
    }

    public var description: String {
        // One string grown in place: this runs for every answer, hits included.
        var text = Self.cacheName
        text.reserveCapacity(64)
        if hit { text += "; hit" }
        if let forward { text += "; fwd=" + forward.rawValue }
        if let forwardStatus { text += "; fwd-status=" + String(forwardStatus) }
        if let ttl { text += "; ttl=" + String(ttl) }
        if stored { text += "; stored" }
        if collapsed { text += "; collapsed" }
        if let detail { text += "; detail=" + detail }
        return text
    }
}
