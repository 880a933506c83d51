import Foundation
import HTTPCore
import CacheVocabulary
import RequestTracing
import Tracing

/// The one cache engine under every route: memory tier, then disk tier, then the tier shared
/// by every replica (when there is one), then the upstream through one flight per request
/// (and, with a shared tier, one per key across replicas), with stale-while-revalidate, stale-if-error,
/// revalidation, the request directives of RFC 9111, `Vary`, and invalidation after unsafe
/// methods. Built-in routes and pass-through routes differ only in their `CachePolicy` and
/// their `render` hook.
///
/// `render` turns an entry into what the route sends for it, once, when the entry is
/// fetched or read back from disk. It may reject an entry (a body that does not decode):
/// that is an upstream failure, and the entry is never stored. With `reuse`, the rendered
/// body is kept in the disk file too, and a disk read uses it instead of rendering again.
/// The memory lookup is synchronous so a hit can be answered on the event loop thread;
/// everything else is async.
public final class Cache: Sendable {
    /// The route's name in every key, so no two routes share a stored response.
    public let route: String
    private let routePart: CacheKey.Route
    public let policy: CachePolicy
    public let memory: MemoryTier
    public let disk: DiskTier?
    /// The tier every replica shares (Redis), when configured.
    public let shared: SharedTier?
    let fetcher: any CacheFetcher
    let clock: any CacheClock
    let render: @Sendable (_ resource: String, CacheEntry) throws -> RenderedResponse
    /// How a body rendered before is used again, for routes whose rendering costs.
    let reuse: RenditionReuse?
    let flights = SingleFlight<Outcome>()
    private let forcedRefreshes: RefreshLimiter

    /// What one exchange with the upstream produced.
    enum Outcome: Sendable {
        case answer(StoredResponse, forwardStatus: Int?, stored: Bool, detail: CacheStatus.Detail?)
        case failure(UpstreamFailure)
        /// Another replica fetched it: found in the shared tier while waiting.
        case found(Found)
    }

    /// A stored response found for a request, and the tier it came from.
    struct Found {
        let response: StoredResponse
        let detail: CacheStatus.Detail
    }

    public init(route: String, policy: CachePolicy, memory: MemoryTier, disk: DiskTier?, shared: SharedTier? = nil,
                fetcher: any CacheFetcher, clock: any CacheClock = SystemClock(), reuse: RenditionReuse? = nil,
                render: @escaping @Sendable (_ resource: String, CacheEntry) throws -> RenderedResponse) {
        self.route = route
        routePart = CacheKey.Route(route)
        self.policy = policy
        self.memory = memory
        self.disk = disk
        self.shared = shared
        self.fetcher = fetcher
        self.clock = clock
        self.render = render
        self.reuse = reuse
        forcedRefreshes = RefreshLimiter(policy.clientRefresh)
    }

    /// The primary key of a resource of this route.
    public func key(_ resource: String) -> CacheKey { CacheKey(route: routePart, resource: resource) }

    /// The answer from memory when the request can be served from it without waiting:
    /// fresh, stale within the client's `max-stale`, or stale within stale-while-revalidate
    /// (then one background refresh starts). Nil means "take the async path".
    public func answerFromMemory(_ request: CacheRequest) -> CacheAnswer? {
        guard request.isCacheable else { return nil }
        let key = key(request.resource)
        guard let response = memoryResponse(key, request) else { return nil }
        return serveWithoutWaiting(request, key: key, found: Found(response: response, detail: .memory),
                                   decision: decide(response.entry, request))
    }

    /// The response the memory tier holds for the request (its variant, when the key has several).
    private func memoryResponse(_ key: CacheKey, _ request: CacheRequest) -> StoredResponse? {
        let item: MemoryTier.Item?
        switch memory.get(key) {
        case .variants(let index)?: item = memory.get(index.variantKey(key, request: request.headers))
        case let other: item = other
        }
        guard case .response(let response)? = item else { return nil }
        return response
    }

    /// The full answer: from memory or disk when allowed, else from the upstream (stored
    /// when the policy allows). Methods other than GET and HEAD, and a GET or HEAD with
    /// content, always go to the upstream.
    public func answer(_ request: CacheRequest) async -> Result<CacheAnswer, CacheFailure> {
        guard request.isCacheable else { return await forwardUncached(request) }
        let key = key(request.resource)
        let found = await lookUp(key, request)
        var forward = CacheStatus.Forward.miss
        if let found {
            let decision = decide(found.response.entry, request)
            if let answer = serveWithoutWaiting(request, key: key, found: found, decision: decision) { return .success(answer) }
            if case .forward(let reason) = decision.action { forward = reason }
            if isClientForced(decision, found.response.entry) { forcedRefreshes.record(key, now: clock.now()) }
        }
        if request.directives.cacheControl.onlyIfCached { return .failure(.notCached) }
        return await answerFromUpstream(request, key: key, found: found, reason: forward)
    }

    /// The upstream's answer through the key's one flight: led by this request, or shared
    /// with the request that leads it. `found` is what this request's lookup found, `reason`
    /// why that was not answer enough.
    func answerFromUpstream(_ request: CacheRequest, key: CacheKey, found: Found?, reason forward: CacheStatus.Forward) async
        -> Result<CacheAnswer, CacheFailure> {
        var (outcome, collapsed) = await flights.run(flightKey(request, key)) { [self] in
            // The lookup may have waited on the disk while another flight for the key ended
            // and stored its answer: that answer is served, not fetched a second time.
            if let stored = storedSinceLookUp(key, request) { return .found(stored) }
            return await coordinatedExchange(request, key: key, stored: found?.response)
        }
        // A waiter gets the leader's answer only when a shared cache may store it: a private
        // answer, or one that sets a cookie, is one visitor's (nginx's `proxy_cache_lock` and
        // Varnish's hit-for-miss send waiters to the origin then). Nothing is stored from it,
        // so no other replica has it either: the waiter asks the origin itself.
        if collapsed, case .answer(let response, _, _, _) = outcome,
           !policy.storage.mayStore(response.entry, request: .none, hasAuthorization: request.hasAuthorization, policy: policy) {
            outcome = await exchange(request, key: key, stored: found?.response)
            collapsed = false
        }
        switch outcome {
        case .found(let found):
            // Served as any hit is: its ttl and age are this replica's reading of the entry.
            return .success(serveWithoutWaiting(request, key: key, found: found, decision: decide(found.response.entry, request))
                ?? answer(found.response, CacheStatus(hit: true, detail: found.detail)))
        case .answer(let response, let forwardStatus, let stored, let detail):
            var answer = answer(response, CacheStatus(forward: forward, forwardStatus: forwardStatus, stored: stored,
                                                      collapsed: collapsed, detail: detail))
            // A stored answer standing in for a failure (a detail says which) passes on no
            // informational response; one just fetched passes on the fetch's own.
            if detail == nil { answer.interim = response.entry.interim }
            return .success(answer)
        case .failure(let failure):
            return .failure(.upstream(failure, CacheStatus(forward: forward, forwardStatus: failure.upstreamStatus, collapsed: collapsed,
                                                           detail: failure.notSent)))
        }
    }

    /// What the memory tier holds now, when it may be served as it is (a fresh answer that a
    /// flight stored after this request looked); nil when the upstream is to be asked.
    private func storedSinceLookUp(_ key: CacheKey, _ request: CacheRequest) -> Found? {
        guard let response = memoryResponse(key, request) else { return nil }
        switch decide(response.entry, request).action {
        case .serve, .serveStale: return Found(response: response, detail: .memory)
        case .serveWhileRevalidating, .forward: return nil
        }
    }

    /// A stored answer that stale-if-error lets stand in for one the upstream has not given
    /// in time (an aggregate's deadline passed while its part was fetched); nil when none may.
    /// The fetch goes on, and stores what it gets.
    public func standIn(for request: CacheRequest) async -> CacheAnswer? {
        guard request.isCacheable, let found = await lookUp(key(request.resource), request),
              CacheDecision.mayServeOnError(found.response.entry, now: clock.now(), policy: policy) else { return nil }
        return answer(found.response, CacheStatus(forward: .stale, detail: .staleIfError))
    }

    /// Removes what is stored for a resource (and so every variant of it) from every tier,
    /// and, through the shared tier, from every other replica's.
    public func invalidate(_ resource: String) async {
        await invalidate(key: key(resource))
    }

    /// As `invalidate(_:)`, by the resource's primary key.
    func invalidate(key: CacheKey) async {
        memory.remove(key)
        await disk?.remove(key)
        // Again: a concurrent request may have read the file back into memory before it went.
        memory.remove(key)
        _ = await shared?.purge(.key(key))
    }

    /// Waits for disk writes started so far (tests, and a clean shutdown).
    public func waitForDiskWrites() async {
        await disk?.waitForWrites()
    }

    // MARK: Reading

    func decide(_ entry: CacheEntry, _ request: CacheRequest) -> CacheDecision {
        CacheDecision.decide(entry, now: clock.now(), request: request.directives, policy: policy)
    }

    func lookUp(_ key: CacheKey, _ request: CacheRequest) async -> Found? {
        var found = await read(key, request)
        if case .variants(let index)? = found?.item { found = await read(index.variantKey(key, request: request.headers), request) }
        guard let found, case .response(let response) = found.item else { return nil }
        return Found(response: response, detail: found.tier)
    }

    /// What a key holds, from memory, else from disk (then kept in memory too), else from the
    /// shared tier (then kept in memory and on disk). An entry the route can no longer render
    /// is removed from the tier it came from: a miss.
    private func read(_ key: CacheKey, _ request: CacheRequest) async -> (item: MemoryTier.Item, tier: CacheStatus.Detail)? {
        if let item = memory.get(key) { return (item, .memory) }
        // A purge while the file is read must not find it back in memory after it.
        let removals = memory.removals
        if let (entry, kept) = await disk?.readKept(key) {
            guard let item = item(entry, request, kept: kept) else {
                await disk?.remove(key)
                return nil
            }
            // Rendered again (by an older format, or never kept): kept now, so the next read
            // need not; unless the file was purged meanwhile.
            if memory.set(key, item, unlessRemovedSince: removals) != nil, let made = rendition(item), made.tag != kept?.tag {
                disk?.rewrite(key, entry, rendition: made)
            }
            return (item, .disk)
        }
        return await readShared(key, request)
    }

    /// What a key holds in the shared tier, kept in this replica's tiers too.
    func readShared(_ key: CacheKey, _ request: CacheRequest) async -> (item: MemoryTier.Item, tier: CacheStatus.Detail)? {
        let removals = memory.removals
        guard let entry = await shared?.read(key) else { return nil }
        return await keepShared(key, entry, request, removalsBefore: removals)
    }

    /// An entry read from the shared tier, kept in this replica's tiers (removed from the
    /// shared tier instead when the route cannot render it). `removalsBefore` is
    /// `memory.removals` from before the read: a purge since then is not undone here.
    func keepShared(_ key: CacheKey, _ entry: CacheEntry, _ request: CacheRequest,
                    removalsBefore removals: UInt64) async -> (item: MemoryTier.Item, tier: CacheStatus.Detail)? {
        guard let shared else { return nil }
        guard let item = item(entry, request) else {
            await shared.discard(key)
            return nil
        }
        // The disk's write goes in line first: a purge that the memory tier has not seen yet
        // when the item is kept there queues its removal after this write.
        disk?.write(key, entry, rendition: rendition(item))
        if memory.set(key, item, unlessRemovedSince: removals) == nil {
            // A purge that may have taken it came first, and its removal may be in line before
            // the write: removed again, after it.
            await disk?.remove(key)
        }
        return (item, .redis)
    }

    /// A tier's entry as the memory tier holds it: a variant index, or a rendered response
    /// (from the kept body when it is the route's current rendering); nil when the route can
    /// no longer render it.
    private func item(_ entry: CacheEntry, _ request: CacheRequest, kept: Rendition? = nil) -> MemoryTier.Item? {
        if let index = VariantIndex(diskEntry: entry) { return .variants(index) }
        if let rendered = reuse?.response(entry, kept: kept) { return .response(StoredResponse(entry: entry, rendered: rendered)) }
        return (try? render(request.resource, entry)).map { .response(StoredResponse(entry: entry, rendered: $0)) }
    }

    /// What the disk keeps beside an entry: the body the route rendered, when it reuses one.
    func rendition(_ item: MemoryTier.Item) -> Rendition? {
        guard let reuse, case .response(let response) = item else { return nil }
        return reuse.rendition(of: response.rendered)
    }

    func serveWithoutWaiting(_ request: CacheRequest, key: CacheKey, found: Found, decision: CacheDecision) -> CacheAnswer? {
        var detail = found.detail
        switch decision.action {
        case .serve, .serveStale:
            break
        case .serveWhileRevalidating:
            // The refresh is a GET even when a HEAD found the entry: it replaces the body too.
            var refresh = request
            refresh.method = .get
            refresh.directives = .none
            flights.startIfIdle(flightKey(refresh, key)) { [self, refresh] in
                // Its own trace, linked to the request that started it: a request never waits for it.
                guard let trace = Trace.current else { return await coordinatedExchange(refresh, key: key, stored: found.response, waits: false) }
                return await trace.detached("revalidate") { span in
                    let outcome = await coordinatedExchange(refresh, key: key, stored: found.response, waits: false)
                    span.attributes["larder.cache.resource"] = SpanAttribute.string(refresh.resource)
                    if case .failure = outcome { span.setStatus(SpanStatus(code: .error)) }
                    return outcome
                }
            }
        case .forward:
            guard isClientForced(decision, found.response.entry), forcedRefreshes.isLimited(key, now: clock.now()) else { return nil }
            detail = policy.clientRefresh == .ignore ? .refreshIgnored : .refreshLimited
        }
        return CacheAnswer(response: found.response, age: Freshness.ageHeader(decision.age),
                           lifetime: Freshness.wholeSeconds(decision.lifetime),
                           status: CacheStatus(hit: true, ttl: decision.ttl, detail: detail))
    }

    /// Whether only the client's directives send a fresh stored answer to the upstream
    /// (`no-cache`, `max-age`, `min-fresh`), not the answer's own (`no-cache` from the origin).
    private func isClientForced(_ decision: CacheDecision, _ entry: CacheEntry) -> Bool {
        guard policy.clientRefresh != .honour, case .forward(.request) = decision.action else { return false }
        return CacheDecision.decide(entry, now: clock.now(), request: .none, policy: policy).action == .serve
    }

    func answer(_ response: StoredResponse, _ status: CacheStatus) -> CacheAnswer {
        let entry = response.entry
        return CacheAnswer(response: response, age: Freshness.ageHeader(Freshness.currentAge(of: entry, now: clock.now())),
                           lifetime: Freshness.wholeSeconds(Freshness.lifetime(of: entry, policy: policy)), status: status)
    }

    /// Requests share a flight only when method, key and every header field agree, so no
    /// caller gets a variant chosen by someone else's fields. The W3C trace context fields
    /// (`traceparent`, `tracestate`) are left out: they name the caller's trace, differ on
    /// every traced request, and do not choose what the origin answers, so traced clients
    /// collapse as untraced ones do (the leader's fields are the ones the origin sees).
    private func flightKey(_ request: CacheRequest, _ key: CacheKey) -> String {
        // Written byte by byte into room made once: 2,200 instructions per miss against 5,200
        // appended piece by piece with `+=` (gate path pass-through-miss).
        // Field names are tokens, so ASCII lower case is all of it.
        var method = request.method.description, text = key.text
        let size = method.utf8.count + 1 + text.utf8.count + request.headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 2 }
        return String(unsafeUninitializedCapacity: size) { out in
            var at = 0
            func put(_ bytes: UnsafeBufferPointer<UInt8>, lowered: Bool = false) {
                for byte in bytes {
                    out[at] = lowered && byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
                    at += 1
                }
            }
            func put(_ byte: UInt8) {
                out[at] = byte
                at += 1
            }
            method.withUTF8 { put($0) }
            put(0x20)
            text.withUTF8 { put($0) }
            for field in request.headers where !Self.isTraceContext(field.name) {
                var name = field.name, value = field.value
                put(0x0A)
                name.withUTF8 { put($0, lowered: true) }
                put(0x3A)
                value.withUTF8 { put($0) }
            }
            return at
        }
    }

    /// Whether a field is one of W3C Trace Context's two; the length test keeps the
    /// comparison off every other field.
    private static func isTraceContext(_ name: String) -> Bool {
        let count = name.utf8.count
        guard count == 10 || count == 11 else { return false }
        let lowered = name.lowercased()
        return lowered == "traceparent" || lowered == "tracestate"
    }
}
