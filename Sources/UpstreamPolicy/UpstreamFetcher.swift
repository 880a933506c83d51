public import Caching
import Foundation
public import HTTPCore
public import CacheVocabulary
public import Bodies
import RequestTracing
public import Upstream

/// The cache's view of one upstream, carried out by the libcurl client, for built-in and
/// pass-through routes alike: the request goes to its URL with its method, fields and body;
/// the answer comes back with its hop-by-hop fields removed; an `UpstreamError` becomes a
/// `UpstreamFailure`; every outcome is counted and remembered for `/readyz` under `name`. While
/// the upstream backs off, nothing is sent and the cache hears `UpstreamFailure.backingOff`.
public struct UpstreamFetcher: CacheFetcher {
    /// The upstream's name in metrics and readiness: `weather`, `balance`, or a pass-through
    /// origin's `scheme://host:port` (`OriginName`).
    let name: String
    let client: UpstreamClient
    let timeout: Duration
    /// Forwarding a client's request (pass-through): its fields go as given, with nothing of
    /// libcurl's own added, and the body comes back as the origin encoded it.
    let forwarding: Bool
    /// Fields added to every request (a built-in route's credentials); never logged.
    let credentials: HTTPHeaders
    /// Which statuses count as `ok` in metrics.
    let isAnswer: @Sendable (Int) -> Bool
    let observer: UpstreamObserver
    let clock: any CacheClock
    /// The cap on requests in flight to this upstream (`--upstream-concurrency`).
    let concurrency: ConcurrencyLimit
    /// Pauses requests while the upstream asks for it or keeps failing (`--upstream-backoff`).
    public let backoff: UpstreamBackoff
    /// Where a request is sent: its own URL (pass-through), or the one a built-in route
    /// makes from the resource.
    public var url: @Sendable (CacheRequest) -> String = { $0.url }

    public init(name: String, client: UpstreamClient, timeout: Duration, forwarding: Bool, credentials: HTTPHeaders, isAnswer: @escaping @Sendable (Int) -> Bool, observer: UpstreamObserver, clock: any CacheClock, concurrency: ConcurrencyLimit, backoff: UpstreamBackoff, url: @escaping @Sendable (CacheRequest) -> String = { $0.url }) {
        self.name = name
        self.client = client
        self.timeout = timeout
        self.forwarding = forwarding
        self.credentials = credentials
        self.isAnswer = isAnswer
        self.observer = observer
        self.clock = clock
        self.concurrency = concurrency
        self.backoff = backoff
        self.url = url
    }

    /// Fields of an upstream's answer a built-in route never sends on (it renders its own),
    /// dropped before storing: no stored entry holds a cookie (`DiskEntryCodec` refuses one).
    static let unusedByRendering = ["set-cookie", CacheOverrides.noteField]
    /// Fields only Larder may write into what it stores: an origin's own note of overrides
    /// would make Larder store what the origin marked private.
    static let larderOwn = [CacheOverrides.noteField]

    /// What of the origin's answer a pass-through route ignores (`CacheOverrides`).
    public var overrides: CacheOverrides = []
    /// Where an answer too large to hold in memory is spooled (a pass-through route's); nil:
    /// such an answer is a failure (`UpstreamRequest.spoolDirectory`).
    public var spoolDirectory: String?
    /// `UpstreamRequest.spoolRoom` and `storesUpTo`.
    public var spoolRoom: SpoolRoom?
    public var storesUpTo: Int?

    public func fetch(_ request: CacheRequest) async throws -> CacheEntry {
        guard let trace = Trace.current else { return try await exchange(request) }
        return try await traced(request, in: trace)
    }

    /// The exchange itself: backoff, a slot, the transfer, and what its outcome teaches.
    func exchange(_ request: CacheRequest) async throws -> CacheEntry {
        let probe: Bool
        switch backoff.admit(now: clock.now()) {
        case .send(let isProbe):
            probe = isProbe
        case .refused(let retryAfter):
            observer.refusedDuringBackoff(upstream: name)
            throw UpstreamFailure.backingOff(retryAfter: retryAfter, upstreamStatus: nil)
        }
        var upstream = UpstreamRequest(url: url(request), method: request.method, headers: request.headers + credentials, body: request.body,
                                       timeout: timeout, connectTimeout: min(timeout, .seconds(2)))
        upstream.forwarding = forwarding
        upstream.spoolDirectory = spoolDirectory
        upstream.spoolRoom = spoolRoom
        upstream.storesUpTo = storesUpTo
        if spoolDirectory != nil { upstream.streamsFrom = HeldAnswer.streamedFrom }
        let entry: CacheEntry
        do {
            // Time in Larder's own queue is Larder's: a request waits for a slot at most as
            // long as the timeout, and the exchange then gets the whole timeout, so a
            // timeout always says the upstream was slow and may count toward its backoff.
            entry = try await concurrency.run(waitingAtMost: timeout) {
                // A body its client broke off while the request waited goes nowhere.
                if case .stream(let region)? = upstream.body, region.stream.progress == .failed {
                    throw UpstreamError.requestBodyIncomplete("the client's body ended short", stalled: false)
                }
                let sent = clock.now()
                let response = try await observer.observed(name, client: client, request: upstream, ok: isAnswer)
                // Timed by the cache's own clock (the one Age and freshness are read with), from just
                // before sending (after any wait for a slot) to just after the answer.
                let fields = HopByHop.removed(from: response.headers, dropping: forwarding ? Self.larderOwn : Self.unusedByRendering)
                return CacheEntry(status: response.status, headers: overrides.applied(to: fields),
                                  body: response.body,
                                  requestTime: sent, responseTime: clock.now(), interim: response.interim)
            }
        } catch is ConcurrencyLimit.WaitedTooLong, is ConcurrencyLimit.Full {
            // Larder's own saturation, not sent: it says nothing about the upstream.
            _ = backoff.record(nil, probe: probe, now: clock.now())
            observer.refusedWhileSaturated(upstream: name)
            throw UpstreamFailure.saturated
        } catch UpstreamError.spoolFailed {
            // Larder's own disk, not the upstream: no backoff.
            _ = backoff.record(nil, probe: probe, now: clock.now())
            throw UpstreamFailure(detail: "the upstream's answer was too large to hold in memory and could not be written to disk")
        } catch UpstreamError.requestBodyIncomplete(let why, let stalled) {
            // The client's doing: no backoff, and the client is answered as its connection
            // refused the body; else a body that stopped arriving is a 408, as the server's
            // own body timeout answers (RFC 9110 §15.5.9), and one that ended short a 400.
            _ = backoff.record(nil, probe: probe, now: clock.now())
            if case .stream(let region)? = request.body, let refusal = region.stream.refusal {
                throw UpstreamFailure.bodyRefused(status: refusal.status, detail: refusal.detail)
            }
            throw UpstreamFailure.bodyRefused(status: stalled ? 408 : 400, detail: "The request body did not arrive whole: \(why).")
        } catch {
            settle(UpstreamBackoff.Outcome(failure: error), probe: probe)
            // The caches' terms: a timeout is a 504 or a stale answer, the rest a 502.
            switch error as? UpstreamError {
            case .timeout?: throw UpstreamFailure.timedOut
            case .bodyTooLarge(let limit)?: throw UpstreamFailure.tooLarge(limit: limit)
            default: throw UpstreamFailure.unreachable
            }
        }
        settle(.answered(status: entry.status, retryAfter: entry.header("retry-after")), probe: probe)
        if backoff.pauses(onStatus: entry.status), let pause = backoff.pause(now: clock.now()) {
            // An answer that began or lengthened the pause is not passed on: the caller gets
            // what every request in the pause gets (a stale answer, or 503 with Retry-After).
            throw UpstreamFailure.backingOff(retryAfter: UpstreamBackoff.seconds(from: clock.now(), to: pause.until), upstreamStatus: entry.status)
        }
        return entry
    }

    @discardableResult
    private func settle(_ outcome: UpstreamBackoff.Outcome, probe: Bool) -> UpstreamBackoff.Change? {
        let change = backoff.record(outcome, probe: probe, now: clock.now())
        if let change { observer.backoffChanged(upstream: name, change) }
        return change
    }
}
