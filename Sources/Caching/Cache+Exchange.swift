import Foundation
import HTTPCore
import Bodies

/// The exchange with the upstream: a conditional request when something is stored, 304 and
/// HEAD freshening (RFC 9111 §4.3.4, §4.3.5), storing what the policy allows, stale answers
/// standing in for failures, and invalidation after unsafe methods (§4.4).
extension Cache {
    /// Conditional and range fields the client sent are answered by Larder from the whole
    /// response it fetches and stores, so they are not forwarded (a 304 or 206 to them could
    /// not be stored or shared).
    private static let answeredHere = ["if-none-match", "if-modified-since", "range", "if-range"]
    /// Statuses stale-if-error covers (RFC 5861 §4).
    private static let errorStatuses: Set<Int> = [500, 502, 503, 504]

    func exchange(_ request: CacheRequest, key: CacheKey, stored: StoredResponse?) async -> Outcome {
        let conditional = stored?.entry.conditionalHeaders ?? []
        var sent = request
        sent.headers = request.headers.filter { !HTTPHeaders.name($0.name, isOneOf: Self.answeredHere) } + conditional
        var fetched: CacheEntry
        do {
            fetched = try await fetcher.fetch(sent)
            if let stored, fetched.status == 304, !conditional.isEmpty {
                if Self.selects(fetched, stored.entry) {
                    return await keep(freshen(stored.entry, by: fetched), forwardStatus: 304, request: request, key: key, stored: stored)
                }
                // §4.3.4: a 304 whose validator names no stored response updates nothing; the
                // request is made again, unconditionally.
                sent.headers = sent.headers.filter { field in !conditional.contains { $0.name == field.name } }
                fetched = try await fetcher.fetch(sent)
            }
        } catch {
            let failure = UpstreamFailure(noAnswer: error)
            // Too large to hold whole, the answer can be neither stored nor ranged here: a
            // Range request then goes to the origin as the client sent it, and the part it
            // answers is relayed.
            guard failure.tooLarge, request.headers.contains("range") else { return failed(failure, stored: stored, noAnswer: true) }
            return await rangeFromOrigin(request, stored: stored)
        }
        if fetched.status == 304 {
            // Not Modified answers a conditional request; passed on, it would tell a client
            // that sent no condition of a copy it does not have.
            return failed(UpstreamFailure(upstreamStatus: 304, detail: "the upstream answered 304 to a request that was not conditional"),
                          stored: stored)
        }
        if request.method == .head {
            // §4.3.5: a 200 to HEAD with the same validators freshens the stored GET response.
            guard let stored, fetched.status == 200 else { return pass(fetched, request, stored: stored) }
            guard Self.sameValidators(stored.entry, fetched) else {
                await invalidate(request.resource)
                return pass(fetched, request, stored: stored)
            }
            return await keep(freshen(stored.entry, by: fetched), forwardStatus: 200, request: request, key: key, stored: stored)
        }
        guard policy.isAnswer(fetched.status) else {
            return failed(UpstreamFailure(upstreamStatus: fetched.status, detail: "the upstream answered \(fetched.status)"), stored: stored)
        }
        if let stored, Self.errorStatuses.contains(fetched.status), CacheDecision.mayServeOnError(stored.entry, now: clock.now(), policy: policy) {
            return .answer(stored, forwardStatus: fetched.status, stored: false, detail: .staleIfError)
        }
        // A 206 answers a Range request; it neither replaces nor removes the whole response.
        if fetched.status == 206 { return pass(fetched, request, stored: stored) }
        // Streaming and too large to store, an answer would reach a range only as fast as the
        // origin sends all before it: the origin answers the range itself, and this transfer,
        // read by nobody, stops (`StreamInterest`).
        if case .stream = fetched.body, !fetched.body.isOpenEnded, fetched.body.count > policy.maxObjectSize,
           request.headers.contains("range") {
            fetched = fetched.with(body: .empty)  // this exchange's hold on the stream, let go now
            return await rangeFromOrigin(request, stored: stored)
        }
        return await keep(fetched, forwardStatus: fetched.status, request: request, key: key, stored: stored)
    }

    /// The client's request as it came, `Range` and all, for an answer too large to be
    /// ranged here; the part the origin answers is relayed.
    private func rangeFromOrigin(_ request: CacheRequest, stored: StoredResponse?) async -> Outcome {
        do {
            return pass(try await fetcher.fetch(request), request, stored: stored)
        } catch {
            return failed(UpstreamFailure(noAnswer: error), stored: stored, noAnswer: true)
        }
    }

    private func freshen(_ entry: CacheEntry, by fetched: CacheEntry) -> CacheEntry {
        entry.freshened(by: fetched.headers, requestTime: fetched.requestTime, responseTime: fetched.responseTime)
    }

    /// The entry with what the route renders from it; a rejected entry is an upstream failure.
    private func rendered(_ entry: CacheEntry, status: Int, _ request: CacheRequest) -> Result<StoredResponse, UpstreamFailure> {
        do {
            return .success(StoredResponse(entry: entry, rendered: try render(request.resource, entry)))
        } catch {
            // Why is the route's to log (its render hook); callers are told in plain words.
            return .failure(UpstreamFailure(upstreamStatus: status, detail: "the upstream's answer could not be read"))
        }
    }

    /// An answer passed on without storing it, rendered for this request alone.
    private func pass(_ fetched: CacheEntry, _ request: CacheRequest, stored: StoredResponse?) -> Outcome {
        switch rendered(fetched, status: fetched.status, request) {
        case .success(let response): .answer(response, forwardStatus: fetched.status, stored: false, detail: nil)
        case .failure(let failure): failed(failure, stored: stored)
        }
    }

    /// No usable answer: a stored response stands in when stale-if-error allows (or, for a
    /// gateway, when the origin could not be reached at all and the response allows).
    private func failed(_ failure: UpstreamFailure, stored: StoredResponse?, noAnswer: Bool = false) -> Outcome {
        guard let stored else { return .failure(failure) }
        if CacheDecision.mayServeOnError(stored.entry, now: clock.now(), policy: policy) {
            return .answer(stored, forwardStatus: failure.upstreamStatus, stored: false, detail: .staleIfError)
        }
        if noAnswer, policy.servesDisconnected, CacheDecision.mayServeDisconnected(stored.entry) {
            return .answer(stored, forwardStatus: nil, stored: false, detail: .disconnected)
        }
        return .failure(failure)
    }

    /// Renders the answer, then stores it when the policy allows. An answer the route cannot
    /// render is an upstream failure. When the response itself forbids storing (not just this
    /// request's `no-store` or `Authorization`), the copy stored before is dropped: the newer
    /// response supersedes it.
    private func keep(_ entry: CacheEntry, forwardStatus: Int, request: CacheRequest, key: CacheKey,
                      stored: StoredResponse?) async -> Outcome {
        let response: StoredResponse
        switch rendered(entry, status: forwardStatus, request) {
        case .success(let made): response = made
        case .failure(let failure): return failed(failure, stored: stored)
        }
        // An open-ended body's size is known only at its end (`put` checks it then).
        guard entry.body.isOpenEnded || entry.body.count <= policy.maxObjectSize else {
            // The newer answer supersedes what was stored before, as when it forbids storing.
            await invalidate(request.resource)
            return .answer(response, forwardStatus: forwardStatus, stored: false, detail: .tooLarge)
        }
        let rule = policy.storage
        guard rule.mayStore(entry, request: request.directives, hasAuthorization: request.hasAuthorization, policy: policy) else {
            if !rule.mayStore(entry, request: .none, hasAuthorization: false, policy: policy) { await invalidate(request.resource) }
            return .answer(response, forwardStatus: forwardStatus, stored: false, detail: nil)
        }
        let vary = rule == .sharedCache ? Vary(of: entry) : Vary([])
        // The shared tier keeps an entry, and the index it is filed under, as long as it may serve.
        let expiry = shared.map { _ in SharedTier.expiry(of: entry, policy: policy, now: clock.now()) }
        let kept: Storing
        if vary.isEmpty {
            kept = await put(key, .response(response), entry, expiry: expiry)
        } else {
            // Variants of one generation share an index; a different Vary starts a new one.
            var index = VariantIndex(vary: vary)
            if case .variants(let current)? = memory.get(key), current.vary == vary { index = current }
            await put(key, .variants(index), index.diskEntry(at: entry.responseTime), expiry: expiry)
            kept = await put(index.variantKey(key, request: request.headers), .response(response), entry, expiry: expiry)
        }
        return .answer(response, forwardStatus: forwardStatus, stored: kept.stored, detail: kept.notAdmitted ? .notAdmitted : nil)
    }

    /// Whether an answer was stored; when not, whether a tier's admission (`AdmissionPolicy`)
    /// turned it away.
    struct Storing {
        var stored: Bool
        var notAdmitted = false
    }

    /// Offers the entry to every tier; disk and shared writes go on in the background (the
    /// lock's release waits for the shared one, so a replica woken by it finds the entry).
    /// Returns whether the memory tier kept it or the disk tier took it for writing (the disk
    /// does not write a large answer its policy would not keep):
    /// `Cache-Status` says `stored` only then (the shared tier's write is not waited for).
    /// When the disk's write queue is full, the answer waits for room a while on its loop
    /// (`DiskTier+Queue`) rather than go unwritten; memory and the shared tier have it first.
    /// A body still arriving is offered to every tier once it is whole, so its answer never
    /// says `stored`; meanwhile the memory tier holds it as it is, so requests for it read
    /// along instead of asking the origin again, and drops it if it never becomes whole (or,
    /// one too large for memory, once the disk tier's write of it is over).
    @discardableResult
    private func put(_ key: CacheKey, _ item: MemoryTier.Item, _ entry: CacheEntry, expiry: Duration?) async -> Storing {
        if case .stream(let region) = entry.body, case .response(let response) = item {
            memory.set(key, item)
            // Read at its readers' pace, the file will never hold the whole body: nobody may
            // start reading it from the beginning any more.
            region.stream.whenPaced { [memory] in memory.remove(key, ifStill: response) }
            region.stream.whenFinished { [self] whole in
                guard whole, !region.stream.isPaced, let body = Self.settled(region), body.count <= policy.maxObjectSize else {
                    memory.remove(key, ifStill: response)
                    // Kept nowhere, it still supersedes what the tiers hold, as in `keep`.
                    Task { await invalidate(key: key.primary) }
                    return
                }
                // Once the stream has ended no answer waits for this entry: a full queue skips it.
                let entry = entry.with(body: body)
                let item = MemoryTier.Item.response(StoredResponse(entry: entry, rendered: response.rendered.with(body: body)))
                guard case .file = body, let disk else {
                    offerToMemoryAndShared(key, item, entry, expiry: expiry)
                    disk?.write(key, entry, rendition: rendition(item))
                    return
                }
                // A body in a file is the disk tier's to serve, once its file is named: until
                // then the whole stream stays in memory, so a request arriving meanwhile is a
                // hit rather than a second fetch (nginx renames its finished temporary file).
                if let expiry { shared?.write(key, entry, expiry: expiry) }
                disk.write(key, entry, rendition: rendition(item)) { [memory] in memory.remove(key, ifStill: response) }
            }
            return Storing(stored: false)
        }
        let inMemory = offerToMemoryAndShared(key, item, entry, expiry: expiry)
        let onDisk = await disk?.offer(key, entry, rendition: rendition(item), waitingUpTo: DiskTier.defaultRoomWait)
        let stored = inMemory == .kept || onDisk == .queued
        return Storing(stored: stored, notAdmitted: !stored && (inMemory == .notAdmitted || onDisk == .notAdmitted))
    }

    /// The tiers that take an entry without waiting, before the disk's, which may wait:
    /// what the memory tier did with it.
    @discardableResult
    private func offerToMemoryAndShared(_ key: CacheKey, _ item: MemoryTier.Item, _ entry: CacheEntry, expiry: Duration?) -> MemoryTier.Placement? {
        let inMemory = memory.offer(key, item)
        if let expiry { shared?.write(key, entry, expiry: expiry) }
        return inMemory
    }

    /// A whole stream's body as a tier keeps it: read into memory when a memory hit may hold
    /// it (up to `HeldAnswer.largestBody`), else its spool file's region; nil when the read fails.
    private static func settled(_ region: StreamRegion) -> Body? {
        let count = region.countSoFar
        guard count <= HeldAnswer.largestBody else {
            return .file(FileRegion(file: region.stream.file, offset: region.offset, count: count))
        }
        var bytes = [UInt8](repeating: 0, count: count)
        let read = count == 0 ? 0 : bytes.withUnsafeMutableBytes { region.stream.file.read(into: $0, at: region.offset) }
        return read == count ? .bytes(bytes) : nil
    }

    /// RFC 9111 §4.3.4: whether a 304 selects the stored response: by its `ETag` (a strong
    /// one exactly, a weak one by weak comparison), else by its `Last-Modified`, else (it
    /// names neither, as RFC 9110 §15.4.5 says it must not) the one stored response.
    static func selects(_ notModified: CacheEntry, _ stored: CacheEntry) -> Bool {
        if let etag = notModified.etag {
            guard let storedTag = stored.etag else { return false }
            return etag.hasPrefix("W/") ? EntityTag.weaklyEqual(etag, storedTag) : etag == storedTag
        }
        if let modified = notModified.lastModified { return modified == stored.lastModified }
        return true
    }

    static func sameValidators(_ stored: CacheEntry, _ fresh: CacheEntry) -> Bool {
        if let a = stored.etag, let b = fresh.etag { return a == b }
        if let a = stored.lastModified, let b = fresh.lastModified { return a == b }
        return stored.etag == nil && fresh.etag == nil
    }

    // MARK: Requests the cache never answers

    private static let safeMethods: Set<HTTPMethod> = [.get, .head, .options, .trace]
    /// The request fields that make a request conditional (RFC 9110 §13.1).
    private static let conditionalFields = ["if-none-match", "if-modified-since", "if-match", "if-unmodified-since", "if-range"]

    /// Forwards a request the cache never answers: another method, or a GET or HEAD with
    /// content. After an unsafe method succeeds, the target and the same-origin `Location`
    /// and `Content-Location` are invalidated (§4.4).
    func forwardUncached(_ request: CacheRequest) async -> Result<CacheAnswer, CacheFailure> {
        var status = request.hasContent && (request.method == .get || request.method == .head)
            ? CacheStatus(forward: .request, detail: .content) : CacheStatus(forward: .method)
        let fetched: CacheEntry
        do {
            fetched = try await fetcher.fetch(request)
        } catch {
            let failure = UpstreamFailure(noAnswer: error)
            if let notSent = failure.notSent { status.detail = notSent }
            return .failure(.upstream(failure, status))
        }
        if fetched.status == 304, !Self.conditionalFields.contains(where: request.headers.contains) {
            status.forwardStatus = 304
            return .failure(.upstream(UpstreamFailure(upstreamStatus: 304, detail: "the upstream answered 304 to a request that was not conditional"),
                                      status))
        }
        if !Self.safeMethods.contains(request.method), (200..<400).contains(fetched.status) {
            await invalidate(request.resource)
            for name in ["location", "content-location"] {
                if let value = fetched.header(name), let target = sameOriginTarget(value) { await invalidate(target) }
            }
        }
        status.forwardStatus = fetched.status
        return rendered(fetched, status: fetched.status, request)
            .map { response in
                var answer = answer(response, status)
                answer.interim = fetched.interim
                return answer
            }
            .mapError { CacheFailure.upstream($0, status) }
    }

    /// The target a URI reference names on this route's origin (a pass-through route is
    /// named by its origin URL), or nil for another origin.
    func sameOriginTarget(_ reference: String) -> String? {
        if reference.hasPrefix("/") { return reference.hasPrefix("//") ? nil : reference }
        guard reference.hasPrefix(route) else { return nil }
        let rest = reference.dropFirst(route.count)
        if rest.isEmpty { return "/" }
        return rest.hasPrefix("/") ? String(rest) : nil
    }
}
