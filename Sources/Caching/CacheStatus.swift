import HTTPCore

/// The `Cache-Status` value (RFC 9211) for one answer, built from what actually happened.
///
/// Examples: `larder; hit; ttl=3542; detail=memory`, `larder; fwd=miss; fwd-status=200; stored`,
/// `larder; fwd=stale; fwd-status=503; detail=stale-if-error`.
public struct CacheStatus: Sendable, Equatable, CustomStringConvertible {
    /// Why the cache went forward to the upstream (RFC 9211 §2.2).
    public enum Forward: String, Sendable, CaseIterable {
        /// Nothing was stored.
        case miss
        /// Something was stored, but stale.
        case stale
        /// Something fresh was stored, but the request asked to go forward (no-cache, max-age, min-fresh).
        case request
        /// The method is never answered from the cache (anything but GET and HEAD).
        case method

        /// Position in `allCases`, for tables indexed without hashing.
        var ordinal: Int {
            switch self {
            case .miss: 0
            case .stale: 1
            case .request: 2
            case .method: 3
            }
        }
    }

    /// Where an answer came from, or why it is what it is: the `detail` member of
    /// `Cache-Status`. The raw values are the one place these words are written; headers,
    /// logs and metric labels all read them from here.
    public enum Detail: String, Sendable, CaseIterable {
        /// Served from the memory tier.
        case memory
        /// Served from the disk tier.
        case disk
        /// Served from the tier every replica shares (Redis): stored by another replica, or
        /// by this one before its own tiers lost it.
        case redis
        /// A stored answer stood in for an upstream failure (RFC 5861 §4).
        case staleIfError = "stale-if-error"
        /// The origin could not be reached; a stored answer was served (RFC 9111 §4.2.4).
        case disconnected
        /// A GET or HEAD with content: forwarded, never cached.
        case content
        /// The client asked for a refresh of a fresh answer, but one ran for this key within
        /// the route's refresh interval: the stored answer was served.
        case refreshLimited = "refresh-limited"
        /// The upstream is backing off (it asked for a pause, or kept failing): it was not asked.
        case backoff
        /// The answer is larger than the route's `maxObjectSize`: relayed, not stored.
        case tooLarge = "too-large"
        /// Every request Larder lets go to the upstream at once was in flight and none came
        /// free in time: it was not asked.
        case saturated
        /// The client asked for a refresh of a fresh answer, and the route ignores such
        /// requests (`client-refresh: ignore`): the stored answer was served.
        case refreshIgnored = "refresh-ignored"
        /// The answer was asked less often than what storing it would have pushed out of the
        /// memory or the disk tier, and no tier stored it: relayed, not stored.
        case notAdmitted = "not-admitted"

        /// Position in `allCases`, for tables indexed without hashing.
        var ordinal: Int {
            switch self {
            case .memory: 0
            case .disk: 1
            case .redis: 2
            case .staleIfError: 3
            case .disconnected: 4
            case .content: 5
            case .refreshLimited: 6
            case .backoff: 7
            case .tooLarge: 8
            case .saturated: 9
            case .refreshIgnored: 10
            case .notAdmitted: 11
            }
        }
    }

    /// The tier an answer is counted under in metrics.
    public enum Tier: String, Sendable, CaseIterable {
        case memory, disk, redis, upstream
        /// Position in `allCases`, for tables indexed without hashing.
        public var ordinal: Int {
            switch self {
            case .memory: 0
            case .disk: 1
            case .redis: 2
            case .upstream: 3
            }
        }
    }

    /// How a lookup ended, for metrics.
    public enum Result: String, Sendable, CaseIterable {
        case hit, stale, miss
        /// Position in `allCases`, for tables indexed without hashing.
        public var ordinal: Int {
            switch self {
            case .hit: 0
            case .stale: 1
            case .miss: 2
            }
        }
    }

    public var hit = false
    public var forward: Forward?
    public var forwardStatus: Int?
    public var ttl: Int?
    public var stored = false
    public var collapsed = false
    public var detail: Detail?

    public init(hit: Bool = false, forward: Forward? = nil, forwardStatus: Int? = nil, ttl: Int? = nil,
                stored: Bool = false, collapsed: Bool = false, detail: Detail? = nil) {
        self.hit = hit
        self.forward = forward
        self.forwardStatus = forwardStatus
        self.ttl = ttl
        self.stored = stored
        self.collapsed = collapsed
        self.detail = detail
    }

    public var description: String {
        var bytes: [UInt8] = []
        append(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the value's octets: this runs for every answer, hits included, so it writes
    /// bytes and makes no String. The members are put together on the stack and appended in
    /// one copy: an append to the array per member cost about a hundred instructions each.
    public func append(to out: inout [UInt8]) {
        // The longest value (every member, both numbers at 20 characters) is 126 bytes.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 160) { buffer in
            var end = 0
            func put(_ bytes: UnsafeBufferPointer<UInt8>) {
                UnsafeMutableRawPointer(buffer.baseAddress! + end).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
                end += bytes.count
            }
            func put(_ text: StaticString) { text.withUTF8Buffer { put($0) } }
            put(hit ? "larder; hit" : "larder")
            if let forward { Self.forwardMembers[forward.ordinal].withUnsafeBufferPointer { put($0) } }
            if let forwardStatus {
                put("; fwd-status=")
                DecimalText.withDigits(forwardStatus) { put($0) }
            }
            if let ttl {
                put("; ttl=")
                DecimalText.withDigits(ttl) { put($0) }
            }
            if stored { put("; stored") }
            if collapsed { put("; collapsed") }
            if let detail { Self.detailMembers[detail.ordinal].withUnsafeBufferPointer { put($0) } }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[..<end]))
        }
    }

    /// `; fwd=` and each forward word, indexed by `Forward.ordinal`.
    private static let forwardMembers = Forward.allCases.map { Array("; fwd=\($0.rawValue)".utf8) }
    /// `; detail=` and each detail word, indexed by `Detail.ordinal`.
    private static let detailMembers = Detail.allCases.map { Array("; detail=\($0.rawValue)".utf8) }

    /// Where this answer counts: the tier it was served from, or `upstream` when it was forwarded.
    public var tier: Tier {
        guard hit else { return .upstream }
        switch detail {
        case .disk?: return .disk
        case .redis?: return .redis
        default: return .memory  // a refresh-limited answer counts where most are: memory
        }
    }

    /// A hit, a stale answer (served past freshness, or standing in for a failure), or a miss.
    public var result: Result {
        if detail == .staleIfError || detail == .disconnected || (ttl ?? 0) < 0 { return .stale }
        return hit ? .hit : .miss
    }
}
