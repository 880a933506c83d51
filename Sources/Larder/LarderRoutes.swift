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

    /// `public, max-age=L, stale-while-revalidate=S, stale-if-error=E`: shareable by any cache.
    func weatherCacheControl(lifetime: Int) -> String {
        "public, max-age=\(lifetime), stale-while-revalidate=\(Int(settings.staleWhileRevalidate.seconds)), "
            + "stale-if-error=\(Int(settings.staleIfError.seconds))"
    }

    /// `private, max-age=L`: an account balance is for its caller only.
    func privateCacheControl(lifetime: Int) -> String { "private, max-age=\(lifetime)" }

    // MARK: /weather

    func weatherHandler(_ request: HTTPRequest) -> HTTPHandlerResult {
        let place: Place
        switch Place.parse(query: request.query, precision: settings.coordinatePrecision) {
        case .failure(let problem): return .now(CachedResponse.badParameter(problem))
        case .success(let parsed): place = parsed
        }
        let directives = RequestDirectives(request)
        if let answer = weather.answerFromMemory(key: place.key, request: directives) {
            return .now(respond(answer, cacheControl: weatherCacheControl, request: request))
        }
        return .later { [self] in
            switch await weather.answer(key: place.key, request: directives) {
            case .success(let answer): return respond(answer, cacheControl: weatherCacheControl, request: request)
            case .failure(let failure): return CachedResponse.failure(failure, part: "weather")
            }
        }
    }

    // MARK: /balance

    func balanceHandler(_ request: HTTPRequest) -> HTTPHandlerResult {
        guard let balance else { return .now(CachedResponse.notConfigured(part: "balance")) }
        let directives = RequestDirectives(request)
        if let answer = balance.answerFromMemory(key: Self.balanceKey, request: directives) {
            return .now(respond(answer, cacheControl: privateCacheControl, request: request))
        }
        return .later { [self] in
            switch await balance.answer(key: Self.balanceKey, request: directives) {
            case .success(let answer): return respond(answer, cacheControl: privateCacheControl, request: request)
            case .failure(let failure): return CachedResponse.failure(failure, part: "balance")
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
        return CachedResponse.make(body: body, etag: RenderedBody.etag(of: body), date: older.date, age: max(w.age, b.age),
                                   cacheControl: privateCacheControl(lifetime: min(w.lifetime, b.lifetime)),
                                   cacheStatus: status.description, request: request)
    }

    /// One Cache-Status for an answer made of two: a hit only when both parts were hits;
    /// otherwise the part that went furthest to the upstream speaks for both.
    static func combined(_ a: CacheStatus, _ b: CacheStatus) -> CacheStatus {
        if a.hit && b.hit {
            let detail = a.detail == "memory" && b.detail == "memory" ? "memory" : "disk"
            return CacheStatus(hit: true, ttl: min(a.ttl ?? 0, b.ttl ?? 0), detail: detail)
        }
        func rank(_ s: CacheStatus) -> Int {
            switch s.forward { case .miss?: 3; case .stale?: 2; case .request?: 1; case nil: 0 }
        }
        var lead = rank(a) >= rank(b) ? a : b
        lead.stored = a.stored || b.stored
        lead.collapsed = a.collapsed || b.collapsed
        return lead
    }

    private func respond(_ answer: CacheAnswer<RenderedBody>, cacheControl: (Int) -> String, request: HTTPRequest) -> HTTPResponse {
        metrics.lookup(answer.status)
        return CachedResponse.make(body: answer.value.body, etag: answer.value.etag, date: answer.value.date, age: answer.age,
                                   cacheControl: cacheControl(answer.lifetime), cacheStatus: answer.status.description,
                                   request: request)
    }
}
