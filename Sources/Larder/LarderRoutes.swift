import Caching
import Foundation
import HTTPServer
import Upstream

/// Larder's API routes on the caches: `/weather`, `/balance` and `/overview`.
///
/// Each handler answers a memory hit at once, on the event loop thread; anything else
/// (disk, upstream, single flight) runs in a Task and is posted back.
struct LarderRoutes: Sendable {
    let settings: ServeSettings
    let weather: TieredCache<RenderedBody>
    /// Nil when no balance upstream is configured (`/balance` then answers 503).
    let balance: TieredCache<RenderedBody>?
    let metrics: LarderMetrics

    /// Who may keep an answer: weather is for anyone, a balance only for its caller.
    enum Audience: Sendable {
        /// `public, max-age=L, stale-while-revalidate=S, stale-if-error=E`
        case shared
        /// `private, max-age=L`
        case caller
    }

    /// Cache-Control with the full lifetime (downstream subtracts Age itself).
    func cacheControl(_ audience: Audience, lifetime: Int) -> String {
        Self.cacheControl(audience, lifetime: lifetime, settings: settings)
    }

    static func cacheControl(_ audience: Audience, lifetime: Int, settings: ServeSettings) -> String {
        switch audience {
        case .shared:
            "public, max-age=\(lifetime), stale-while-revalidate=\(Int(settings.staleWhileRevalidate.seconds)), "
                + "stale-if-error=\(Int(settings.staleIfError.seconds))"
        case .caller:
            "private, max-age=\(lifetime)"
        }
    }

    // MARK: /weather and /balance

    func weatherHandler(_ request: HTTPRequest) -> HTTPHandlerResult {
        switch Place.parse(query: request.query, precision: settings.coordinatePrecision) {
        case .failure(let problem): .now(CachedResponse.badParameter(problem))
        case .success(let place): lookUp(weather, key: place.key, part: "weather", audience: .shared, request: request)
        }
    }

    func balanceHandler(_ request: HTTPRequest) -> HTTPHandlerResult {
        guard let balance else { return .now(CachedResponse.notConfigured(part: "balance")) }
        return lookUp(balance, key: Self.balanceKey, part: "balance", audience: .caller, request: request)
    }

    /// A memory hit answers at once on the loop thread; anything else goes async.
    private func lookUp(_ cache: TieredCache<RenderedBody>, key: String, part: String, audience: Audience,
                        request: HTTPRequest) -> HTTPHandlerResult {
        let directives = RequestDirectives(request)
        if let answer = cache.answerFromMemory(key: key, request: directives) {
            return .now(respond(answer, audience: audience, request: request))
        }
        return .later { [self] in
            switch await cache.answer(key: key, request: directives) {
            case .success(let answer): respond(answer, audience: audience, request: request)
            case .failure(let failure): CachedResponse.failure(failure, part: part)
            }
        }
    }

    static let balanceKey = "balance"

    // MARK: /overview

    func overviewHandler(_ request: HTTPRequest) -> HTTPHandlerResult {
        let place: Place
        switch Place.parse(query: request.query, precision: settings.coordinatePrecision) {
        case .failure(let problem): return .now(CachedResponse.badParameter(problem))
        case .success(let parsed): place = parsed
        }
        guard let balance else { return .now(CachedResponse.notConfigured(part: "balance")) }
        let directives = RequestDirectives(request)
        if let w = weather.answerFromMemory(key: place.key, request: directives),
           let b = balance.answerFromMemory(key: Self.balanceKey, request: directives) {
            return .now(overview(w, b, request: request))
        }
        return .later { [self] in
            async let w = weather.answer(key: place.key, request: directives)
            async let b = balance.answer(key: Self.balanceKey, request: directives)
            switch (await w, await b) {
            case (.success(let w), .success(let b)): return overview(w, b, request: request)
            case (.failure(let failure), _): return CachedResponse.failure(failure, part: "weather")
            case (_, .failure(let failure)): return CachedResponse.failure(failure, part: "balance")
            }
        }
    }

    /// Both parts in one body; its lifetime is the shorter one and its age the older one.
    private func overview(_ w: CacheAnswer<RenderedBody>, _ b: CacheAnswer<RenderedBody>, request: HTTPRequest) -> HTTPResponse {
        let body = Array("{\"weather\":".utf8) + w.value.body + Array(",\"balance\":".utf8) + b.value.body + [0x7D]
        let status = Self.combined(w.status, b.status)
        metrics.lookup(w.status)
        metrics.lookup(b.status)
        // Age and Date come from the older part, so the pair stays consistent for downstream caches.
        let older = w.age >= b.age ? w.value : b.value
        let lifetime = min(w.lifetime, b.lifetime)
        let value = RenderedBody(body: body, date: older.date, lifetime: lifetime, cacheControl: cacheControl(.caller, lifetime: lifetime))
        return CachedResponse.make(value, age: max(w.age, b.age), lifetime: lifetime, cacheControl: { cacheControl(.caller, lifetime: $0) },
                                   cacheStatus: status.description, request: request)
    }

    /// One Cache-Status for an answer made of two: a hit only when both parts were hits;
    /// otherwise the part that went furthest to the upstream speaks for both.
    static func combined(_ a: CacheStatus, _ b: CacheStatus) -> CacheStatus {
        if a.hit && b.hit {
            let detail: CacheStatus.Detail = a.detail == .memory && b.detail == .memory ? .memory : .disk
            return CacheStatus(hit: true, ttl: min(a.ttl ?? 0, b.ttl ?? 0), detail: detail)
        }
        func rank(_ s: CacheStatus) -> Int {
            switch s.forward { case .miss?, .method?: 3; case .stale?: 2; case .request?: 1; case nil: 0 }
        }
        var lead = rank(a) >= rank(b) ? a : b
        lead.stored = a.stored || b.stored
        lead.collapsed = a.collapsed || b.collapsed
        return lead
    }

    private func respond(_ answer: CacheAnswer<RenderedBody>, audience: Audience, request: HTTPRequest) -> HTTPResponse {
        metrics.lookup(answer.status)
        return CachedResponse.make(answer.value, age: answer.age, lifetime: answer.lifetime,
                                   cacheControl: { cacheControl(audience, lifetime: $0) }, cacheStatus: answer.status.description,
                                   request: request)
    }
}
