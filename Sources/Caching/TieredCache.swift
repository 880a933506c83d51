import Foundation

/// The cache of one kind of resource: memory tier, then disk tier, then the upstream
/// through one flight per key, with stale-while-revalidate, stale-if-error, revalidation
/// and the request directives of RFC 9111.
///
/// `decode` turns a fetched entry (and its key) into the route's value; an entry that does not decode is
/// an upstream failure and is never stored. The memory lookup is synchronous so a hit can
/// be answered on the event loop thread; everything else is async.
public final class TieredCache<Value: Sendable>: Sendable {
    public let policy: CachePolicy
    public let memory: MemoryTier
    public let disk: DiskTier?
    private let fetcher: any CacheFetcher
    private let clock: any CacheClock
    private let decode: @Sendable (_ key: String, CacheEntry) throws -> Value
    private let flights = SingleFlight<FlightOutcome>()

    /// What one flight to the upstream produced.
    enum FlightOutcome: Sendable {
        case answer(CacheEntry, Value, upstreamStatus: Int, stored: Bool)
        case failure(UpstreamFailure)
    }

    public init(policy: CachePolicy, memory: MemoryTier, disk: DiskTier?, fetcher: any CacheFetcher,
                clock: any CacheClock = SystemClock(), decode: @escaping @Sendable (_ key: String, CacheEntry) throws -> Value) {
        self.policy = policy
        self.memory = memory
        self.disk = disk
        self.fetcher = fetcher
        self.clock = clock
        self.decode = decode
    }

    /// Flights to the upstream running now (foreground or background refresh).
    public var flightsInProgress: Int { flights.inFlight }

    /// The answer from memory when the request can be served from it without waiting:
    /// fresh, stale within the client's `max-stale`, or stale within stale-while-revalidate
    /// (then one background refresh starts). Nil means "take the async path".
    public func answerFromMemory(key: String, request: RequestDirectives) -> CacheAnswer<Value>? {
        guard let item = memory.get(key), let value = (item.value as? MemoryTier.Box<Value>)?.value else { return nil }
        let decision = CacheDecision.decide(item.entry, now: clock.now(), request: request, policy: policy)
        return serveWithoutWaiting(key: key, entry: item.entry, value: value, decision: decision, detail: .memory)
    }

    /// The full lookup: memory, disk, then the upstream.
    public func answer(key: String, request: RequestDirectives) async -> Result<CacheAnswer<Value>, CacheFailure> {
        var candidate: (entry: CacheEntry, decision: CacheDecision)?
        if let item = memory.get(key), let value = (item.value as? MemoryTier.Box<Value>)?.value {
            let decision = CacheDecision.decide(item.entry, now: clock.now(), request: request, policy: policy)
            if let answer = serveWithoutWaiting(key: key, entry: item.entry, value: value, decision: decision, detail: .memory) {
                return .success(answer)
            }
            candidate = (item.entry, decision)
        } else if let entry = await disk?.read(key) {
            if let value = try? decode(key, entry) {
                memory.set(key, MemoryTier.Item(entry: entry, value: MemoryTier.Box(value)))
                let decision = CacheDecision.decide(entry, now: clock.now(), request: request, policy: policy)
                if let answer = serveWithoutWaiting(key: key, entry: entry, value: value, decision: decision, detail: .disk) {
                    return .success(answer)
                }
                candidate = (entry, decision)
            } else {
                await disk?.remove(key)  // stored bytes this route can no longer read: a miss
            }
        }

        if request.cacheControl.onlyIfCached { return .failure(.notCached) }

        let forward: CacheStatus.Forward
        if case .forward(let reason)? = candidate?.decision.action { forward = reason } else { forward = .miss }
        let stale = candidate?.entry
        let (outcome, collapsed) = await flights.run(key) { [self] in await refresh(key: key, stale: stale, request: request) }
        let now = clock.now()
        switch outcome {
        case .answer(let entry, let value, let upstreamStatus, let stored):
            let status = CacheStatus(forward: forward, forwardStatus: upstreamStatus, stored: stored, collapsed: collapsed)
            return .success(compose(entry, value, now: now, status: status))
        case .failure(let failure):
            if let stale, CacheDecision.mayServeOnError(stale, now: now, policy: policy), let value = try? decode(key, stale) {
                let status = CacheStatus(forward: forward, forwardStatus: failure.upstreamStatus, collapsed: collapsed,
                                         detail: .staleIfError)
                return .success(compose(stale, value, now: now, status: status))
            }
            let status = CacheStatus(forward: forward, forwardStatus: failure.upstreamStatus, collapsed: collapsed)
            return .failure(.upstream(failure, status))
        }
    }

    /// Waits for disk writes started so far (tests, and a clean shutdown).
    public func waitForDiskWrites() async {
        await disk?.waitForWrites()
    }

    // MARK: Pieces

    private func serveWithoutWaiting(key: String, entry: CacheEntry, value: Value, decision: CacheDecision,
                                     detail: CacheStatus.Detail) -> CacheAnswer<Value>? {
        switch decision.action {
        case .serve, .serveStale:
            return answer(entry, value, decision, CacheStatus(hit: true, ttl: decision.ttl, detail: detail))
        case .serveWhileRevalidating:
            flights.startIfIdle(key) { [self] in await refresh(key: key, stale: entry, request: .none) }
            return answer(entry, value, decision, CacheStatus(hit: true, ttl: decision.ttl, detail: detail))
        case .forward:
            return nil
        }
    }

    private func answer(_ entry: CacheEntry, _ value: Value, _ decision: CacheDecision, _ status: CacheStatus) -> CacheAnswer<Value> {
        CacheAnswer(value: value, entry: entry, age: Freshness.ageHeader(decision.age),
                    lifetime: Freshness.wholeSeconds(decision.lifetime), status: status)
    }

    private func compose(_ entry: CacheEntry, _ value: Value, now: Date, status: CacheStatus) -> CacheAnswer<Value> {
        let decision = CacheDecision(action: .serve, age: Freshness.currentAge(of: entry, now: now),
                                     lifetime: Freshness.lifetime(of: entry, policy: policy))
        return answer(entry, value, decision, status)
    }

    /// One exchange with the upstream (conditional when `stale` has validators), then the
    /// answer stored in both tiers when it may be.
    private func refresh(key: String, stale: CacheEntry?, request: RequestDirectives) async -> FlightOutcome {
        let conditional = stale?.conditionalHeaders ?? []
        let fetched: CacheEntry
        do {
            fetched = try await fetcher.fetch(key: key, headers: conditional)
        } catch {
            return .failure(UpstreamFailure(noAnswerFrom: "upstream", error))
        }

        let entry: CacheEntry
        if fetched.status == 304, let stale, !conditional.isEmpty {
            entry = stale.freshened(by: fetched.headers, requestTime: fetched.requestTime, responseTime: fetched.responseTime)
        } else if policy.answerStatuses.contains(fetched.status) {
            entry = fetched
        } else {
            return .failure(UpstreamFailure(upstreamStatus: fetched.status, detail: "the upstream answered \(fetched.status)"))
        }
        let value: Value
        do {
            value = try decode(key, entry)
        } catch {
            return .failure(UpstreamFailure(upstreamStatus: fetched.status, detail: "the upstream's answer could not be read: \(error)"))
        }
        let stores = CacheDecision.mayStore(entry, policy: policy, request: request)
        if stores {
            memory.set(key, MemoryTier.Item(entry: entry, value: MemoryTier.Box(value)))
            disk?.write(key, entry)
        } else if !CacheDecision.mayStore(entry, policy: policy, request: .none) {
            // The upstream now forbids keeping this resource: drop the copy we had.
            memory.remove(key)
            await disk?.remove(key)
        }
        return .answer(entry, value, upstreamStatus: fetched.status, stored: stores)
    }
}
