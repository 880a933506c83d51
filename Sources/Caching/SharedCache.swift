import Foundation

/// The shared cache of RFC 9111 in front of one origin (a pass-through route), on the same
/// memory and disk tiers and the same single flights as the built-in routes.
///
/// Unlike `TieredCache`, every status is an answer and is passed on; what is stored follows
/// §3 (`SharedStorage`), selection follows `Vary` (`VariantIndex`), unsafe methods
/// invalidate (§4.4), and 304 and HEAD responses freshen what is stored (§4.3.4, §4.3.5).
public final class SharedCache: Sendable {
    /// One request as the route hands it over: the target is path and query as sent, and
    /// the header fields are the end-to-end ones (hop-by-hop fields already removed).
    public struct Request: Sendable {
        public var method: String
        public var target: String
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]?

        public init(method: String, target: String, headers: [(name: String, value: String)], body: [UInt8]? = nil) {
            self.method = method
            self.target = target
            self.headers = headers
            self.body = body
        }

        /// GET and HEAD without content. A GET or HEAD with content is forwarded as it is,
        /// but its answer depends on that content: it is never answered from the cache,
        /// stored, or shared with another request.
        var isCacheable: Bool { (method == "GET" || method == "HEAD") && !hasContent }
        var hasContent: Bool { !(body?.isEmpty ?? true) }
        var hasAuthorization: Bool { headers.contains { CacheEntry.named($0.name, "authorization") } }
        var directives: RequestDirectives {
            RequestDirectives(cacheControl: values("cache-control"), pragma: values("pragma"))
        }
        func values(_ name: String) -> [String] { headers.filter { CacheEntry.named($0.name, name) }.map(\.value) }
    }

    /// What to send back: the response as the origin gave it (or as stored), its `Age`, and
    /// the `Cache-Status` of what happened.
    public struct Answer: Sendable {
        public let entry: CacheEntry
        public let age: Int
        public let status: CacheStatus
        /// What `prepare` made of the entry when it was stored, on answers from memory.
        public let prepared: (any AnyObject & Sendable)?
    }

    /// What one exchange with the origin produced.
    enum Outcome: Sendable {
        case answer(CacheEntry, forwardStatus: Int?, stored: Bool, detail: CacheStatus.Detail?)
        case failure(UpstreamFailure)
    }

    /// A stored response found for a request, the tier it came from, and its prepared form.
    struct Stored {
        let entry: CacheEntry
        let detail: CacheStatus.Detail
        var prepared: (any AnyObject & Sendable)?
    }

    /// Scheme, host and port (and any base path) the route forwards to, with no trailing slash.
    public let origin: String
    public let policy: CachePolicy
    private let memory: MemoryTier
    private let disk: DiskTier?
    private let fetcher: any OriginFetcher
    private let clock: any CacheClock
    private let prepare: @Sendable (CacheEntry) -> any AnyObject & Sendable
    private let flights = SingleFlight<Outcome>()

    /// `prepare` makes what the service wants at hand on a memory hit (its rendered header
    /// fields); it runs once per stored response, not per hit.
    public init(origin: String, memory: MemoryTier, disk: DiskTier?, fetcher: any OriginFetcher,
                clock: any CacheClock = SystemClock(), policy: CachePolicy = .sharedCache,
                prepare: @escaping @Sendable (CacheEntry) -> any AnyObject & Sendable = { $0 }) {
        self.origin = origin
        self.memory = memory
        self.disk = disk
        self.fetcher = fetcher
        self.clock = clock
        self.policy = policy
        self.prepare = prepare
    }

    /// The primary cache key of a target: the URL it is fetched from, apart from the
    /// built-in routes' keys.
    public func key(_ target: String) -> String { "origin " + origin + target }

    /// The answer from memory when a GET or HEAD can be served without waiting; nil means
    /// "take the async path".
    public func answerFromMemory(_ request: Request) -> Answer? {
        guard request.isCacheable else { return nil }
        let key = key(request.target)
        guard var item = memory.get(key) else { return nil }
        if let index = VariantIndex(item.entry) {
            guard let variant = memory.get(index.variantKey(key, request: request.headers)) else { return nil }
            item = variant
        }
        return serveWithoutWaiting(request, key: key, stored: Stored(entry: item.entry, detail: .memory, prepared: item.value),
                                   decision: decide(item.entry, request))
    }

    /// The full answer: from memory or disk when allowed, else from the origin (stored when
    /// §3 allows). Methods other than GET and HEAD, and a GET or HEAD with content, always
    /// go to the origin.
    public func answer(_ request: Request) async -> Result<Answer, CacheFailure> {
        guard request.isCacheable else { return await forwardUncached(request) }
        let key = key(request.target)
        let stored = await lookUp(key, request.headers)
        var forward = CacheStatus.Forward.miss
        if let stored {
            let decision = decide(stored.entry, request)
            if let answer = serveWithoutWaiting(request, key: key, stored: stored, decision: decision) { return .success(answer) }
            if case .forward(let reason) = decision.action { forward = reason }
        }
        if request.directives.cacheControl.onlyIfCached { return .failure(.notCached) }

        let (outcome, collapsed) = await flights.run(flightKey(request, key)) { [self] in
            await exchange(request, key: key, stored: stored?.entry)
        }
        switch outcome {
        case .answer(let entry, let forwardStatus, let stored, let detail):
            return .success(answer(entry, CacheStatus(forward: forward, forwardStatus: forwardStatus, stored: stored,
                                                      collapsed: collapsed, detail: detail)))
        case .failure(let failure):
            return .failure(.upstream(failure, CacheStatus(forward: forward, forwardStatus: failure.upstreamStatus, collapsed: collapsed)))
        }
    }

    /// Removes what is stored for a target (and so every variant of it).
    public func invalidate(_ target: String) async {
        let key = key(target)
        memory.remove(key)
        await disk?.remove(key)
    }

    /// Waits for disk writes started so far (tests, and a clean shutdown).
    public func waitForDiskWrites() async {
        await disk?.waitForWrites()
    }

    // MARK: Reading

    private func decide(_ entry: CacheEntry, _ request: Request) -> CacheDecision {
        CacheDecision.decide(entry, now: clock.now(), request: request.directives, policy: policy)
    }

    private func lookUp(_ key: String, _ headers: [(name: String, value: String)]) async -> Stored? {
        guard let top = await read(key) else { return nil }
        guard let index = VariantIndex(top.entry) else { return top }
        return await read(index.variantKey(key, request: headers))
    }

    private func read(_ key: String) async -> Stored? {
        if let item = memory.get(key) { return Stored(entry: item.entry, detail: .memory, prepared: item.value) }
        guard let entry = await disk?.read(key) else { return nil }
        let item = self.item(entry)
        memory.set(key, item)
        return Stored(entry: entry, detail: .disk, prepared: item.value)
    }

    /// A memory item: index entries as they are, responses with their prepared form.
    private func item(_ entry: CacheEntry) -> MemoryTier.Item {
        MemoryTier.Item(entry: entry, value: entry.status == VariantIndex.status ? entry : prepare(entry))
    }

    private func serveWithoutWaiting(_ request: Request, key: String, stored: Stored, decision: CacheDecision) -> Answer? {
        switch decision.action {
        case .serve, .serveStale:
            break
        case .serveWhileRevalidating:
            // The refresh is a GET even when a HEAD found the entry: it replaces the body too.
            let refresh = Request(method: "GET", target: request.target, headers: request.headers)
            flights.startIfIdle(flightKey(refresh, key)) { [self] in await exchange(refresh, key: key, stored: stored.entry) }
        case .forward:
            return nil
        }
        return answer(stored.entry, CacheStatus(hit: true, ttl: decision.ttl, detail: stored.detail), prepared: stored.prepared)
    }

    private func answer(_ entry: CacheEntry, _ status: CacheStatus, prepared: (any AnyObject & Sendable)? = nil) -> Answer {
        Answer(entry: entry, age: Freshness.ageHeader(Freshness.currentAge(of: entry, now: clock.now())), status: status,
               prepared: prepared)
    }

    /// Requests share a flight only when method, target and every header field agree, so no
    /// caller gets a variant chosen by someone else's fields.
    private func flightKey(_ request: Request, _ key: String) -> String {
        var flight = request.method + " " + key
        for field in request.headers { flight += "\n" + field.name.lowercased() + ":" + field.value }
        return flight
    }

    // MARK: The exchange with the origin

    /// Conditional and range fields the client sent are answered by Larder from the whole
    /// response it fetches and stores, so they are not forwarded (a 304 or 206 to them could
    /// not be stored or shared).
    private static let answeredHere: Set<String> = ["if-none-match", "if-modified-since", "range", "if-range"]
    /// Statuses stale-if-error covers (RFC 5861 §4).
    private static let errorStatuses: Set<Int> = [500, 502, 503, 504]

    private func exchange(_ request: Request, key: String, stored: CacheEntry?) async -> Outcome {
        let conditional = stored?.conditionalHeaders ?? []
        let headers = request.headers.filter { !Self.answeredHere.contains($0.name.lowercased()) } + conditional
        let fetched: CacheEntry
        do {
            var sent = request
            sent.headers = headers
            fetched = try await fetcher.forward(sent, to: origin + request.target)
        } catch {
            if let stored, CacheDecision.mayServeOnError(stored, now: clock.now(), policy: policy) {
                return .answer(stored, forwardStatus: nil, stored: false, detail: .staleIfError)
            }
            if let stored, CacheDecision.mayServeDisconnected(stored) {
                return .answer(stored, forwardStatus: nil, stored: false, detail: .disconnected)
            }
            return .failure(UpstreamFailure(noAnswerFrom: "origin", error))
        }

        if let stored, fetched.status == 304, !conditional.isEmpty {
            return await keep(stored.freshened(by: fetched.headers, requestTime: fetched.requestTime, responseTime: fetched.responseTime),
                              forwardStatus: 304, request: request, key: key)
        }
        if request.method == "HEAD" {
            // §4.3.5: a 200 to HEAD with the same validators freshens the stored GET response.
            guard let stored, fetched.status == 200 else { return .answer(fetched, forwardStatus: fetched.status, stored: false, detail: nil) }
            guard Self.sameValidators(stored, fetched) else {
                await invalidate(request.target)
                return .answer(fetched, forwardStatus: 200, stored: false, detail: nil)
            }
            return await keep(stored.freshened(by: fetched.headers, requestTime: fetched.requestTime, responseTime: fetched.responseTime),
                              forwardStatus: 200, request: request, key: key)
        }
        if let stored, Self.errorStatuses.contains(fetched.status), CacheDecision.mayServeOnError(stored, now: clock.now(), policy: policy) {
            return .answer(stored, forwardStatus: fetched.status, stored: false, detail: .staleIfError)
        }
        // A 206 answers a Range request; it neither replaces nor removes the whole response.
        if fetched.status == 206 { return .answer(fetched, forwardStatus: 206, stored: false, detail: nil) }
        return await keep(fetched, forwardStatus: fetched.status, request: request, key: key)
    }

    /// Stores the response when §3 allows. When the response itself forbids storing (not
    /// just this request's `no-store` or `Authorization`), the copy stored before is dropped:
    /// the newer response supersedes it.
    private func keep(_ entry: CacheEntry, forwardStatus: Int, request: Request, key: String) async -> Outcome {
        guard SharedStorage.mayStore(entry, request: request.directives, hasAuthorization: request.hasAuthorization, policy: policy) else {
            if !SharedStorage.mayStore(entry, request: .none, hasAuthorization: false, policy: policy) { await invalidate(request.target) }
            return .answer(entry, forwardStatus: forwardStatus, stored: false, detail: nil)
        }
        let vary = Vary(of: entry)
        if vary.isEmpty {
            put(key, entry)
        } else {
            // Variants of one generation share an index; a different Vary starts a new one.
            let current = memory.get(key).flatMap { VariantIndex($0.entry) }
            let index = current?.vary == vary ? current! : VariantIndex(vary: vary)
            put(key, index.entry(at: entry.responseTime))
            put(index.variantKey(key, request: request.headers), entry)
        }
        return .answer(entry, forwardStatus: forwardStatus, stored: true, detail: nil)
    }

    private func put(_ key: String, _ entry: CacheEntry) {
        memory.set(key, item(entry))
        disk?.write(key, entry)
    }

    static func sameValidators(_ stored: CacheEntry, _ fresh: CacheEntry) -> Bool {
        if let a = stored.etag, let b = fresh.etag { return a == b }
        if let a = stored.lastModified, let b = fresh.lastModified { return a == b }
        return stored.etag == nil && fresh.etag == nil
    }

    // MARK: Unsafe methods

    private static let safeMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "TRACE"]

    /// Forwards a request the cache never answers: another method, or a GET or HEAD with
    /// content. After an unsafe method succeeds, the target and the same-origin `Location`
    /// and `Content-Location` are invalidated (§4.4).
    private func forwardUncached(_ request: Request) async -> Result<Answer, CacheFailure> {
        let status = request.hasContent && (request.method == "GET" || request.method == "HEAD")
            ? CacheStatus(forward: .request, detail: .content) : CacheStatus(forward: .method)
        let fetched: CacheEntry
        do {
            fetched = try await fetcher.forward(request, to: origin + request.target)
        } catch {
            return .failure(.upstream(UpstreamFailure(noAnswerFrom: "origin", error), status))
        }
        if !Self.safeMethods.contains(request.method), (200..<400).contains(fetched.status) {
            await invalidate(request.target)
            for name in ["location", "content-location"] {
                if let value = fetched.header(name), let target = sameOriginTarget(value) { await invalidate(target) }
            }
        }
        var answered = status
        answered.forwardStatus = fetched.status
        return .success(answer(fetched, answered))
    }

    /// The target a URI reference names on this origin, or nil for another origin.
    func sameOriginTarget(_ reference: String) -> String? {
        if reference.hasPrefix("/") { return reference.hasPrefix("//") ? nil : reference }
        guard reference.hasPrefix(origin) else { return nil }
        let rest = reference.dropFirst(origin.count)
        if rest.isEmpty { return "/" }
        return rest.hasPrefix("/") ? String(rest) : nil
    }
}
