import Foundation
import HTTPCore
import CacheVocabulary
import Bodies
import Synchronization
import Testing
import TestSupport
@testable import Caching

/// A shared cache over a scripted origin, with a manual clock and its own directory.
struct SharedHarness {
    let clock = ManualClock()
    let origin: ScriptedUpstream
    let cache: Cache
    let memory = MemoryTier(budget: 1 << 20)

    init() throws {
        origin = ScriptedUpstream(clock: clock)
        cache = Cache(route: "http://origin.test", policy: .sharedCache, memory: memory,
                      disk: try DiskTier(directory: temporaryDirectory(), budget: 1 << 24), fetcher: origin, clock: clock) { _, entry in
            .plain(entry)
        }
    }

    @discardableResult
    func send(_ method: String = "GET", _ target: String = "/r", _ headers: [(String, String)] = [], body: String? = nil) async throws -> CacheAnswer {
        let request = CacheRequest(method: HTTPMethod(token: method), resource: target, url: "http://origin.test" + target,
                                   headers: HTTPHeaders(headers), body: body.map { .bytes(Array($0.utf8)) })
        switch await cache.answer(request) {
        case .success(let answer): return answer
        case .failure(let failure): throw failure
        }
    }

    func body(_ answer: CacheAnswer) -> String { String(decoding: answer.entry.body.inMemory ?? [], as: UTF8.self) }
}

@Suite(.timeLimit(.minutes(1)))
struct SharedCachePolicyTests {
    @Test func storesAnyStatusWithExplicitFreshness() async throws {
        let h = try SharedHarness()
        h.origin.reply(.init(status: 404, headers: [("Cache-Control", "max-age=60")], body: "gone"))
        let first = try await h.send()
        #expect(first.entry.status == 404)
        #expect(first.status.description == "larder; fwd=miss; fwd-status=404; stored")
        let second = try await h.send()
        #expect(second.entry.status == 404 && h.body(second) == "gone")
        #expect(second.status.hit)
        #expect(h.origin.calls == 1)
    }

    @Test func heuristicFreshnessOnlyForHeuristicallyCacheableStatuses() async throws {
        let h = try SharedHarness()
        let date = HTTPDate.format(h.clock.now())
        let lastModified = HTTPDate.format(h.clock.now().addingTimeInterval(-10_000))
        for (status, cached) in [(200, true), (404, true), (201, false), (403, false), (503, false)] {
            h.origin.reply(.init(status: status, headers: [("Date", date), ("Last-Modified", lastModified)]))
            try await h.send("GET", "/h\(status)")
            let again = try await h.send("GET", "/h\(status)")
            #expect(again.status.hit == cached, "status \(status)")
        }
        // A tenth of the 10 000 s since Last-Modified: fresh at 999 s, stale at 1001 s.
        h.clock.advance(by: 999)
        #expect(try await h.send("GET", "/h200").status.hit)
        h.clock.advance(by: 2)
        #expect(!(try await h.send("GET", "/h200").status.hit))
    }

    @Test func noDefaultLifetime() async throws {
        let h = try SharedHarness()
        h.origin.reply(.init(status: 200, headers: []))
        try await h.send()
        let second = try await h.send()
        #expect(!second.status.hit)
        #expect(h.origin.calls == 2)
    }

    @Test func privateNoStoreAndAuthorizationAreNotShared() async throws {
        let h = try SharedHarness()
        for (target, cacheControl) in [("/p", "private, max-age=60"), ("/n", "no-store, max-age=60")] {
            h.origin.reply(.init(headers: [("Cache-Control", cacheControl)]))
            #expect(!(try await h.send("GET", target).status.stored))
            #expect(!(try await h.send("GET", target).status.hit))
        }
        h.origin.reply(.init(headers: [("Cache-Control", "max-age=60")]))
        #expect(!(try await h.send("GET", "/a", [("Authorization", "Bearer x")]).status.stored))
        h.origin.reply(.init(headers: [("Cache-Control", "max-age=60, public")]))
        #expect(try await h.send("GET", "/a", [("Authorization", "Bearer x")]).status.stored)
        h.origin.reply(.init(headers: [("Cache-Control", "s-maxage=60")]))
        #expect(try await h.send("GET", "/s", [("Authorization", "Bearer x")]).status.stored)
    }

    /// One client's cookie must not reach the next: an answer that sets one is passed on,
    /// not stored, however fresh the origin says it is; the next one without is stored.
    @Test func anAnswerThatSetsACookieIsNotStored() async throws {
        let h = try SharedHarness()
        h.origin.reply(.init(headers: [("Cache-Control", "public, max-age=600"), ("Set-Cookie", "session=alice")]))
        let first = try await h.send("GET", "/c")
        #expect(!first.status.stored && first.entry.header("set-cookie") == "session=alice")
        h.origin.reply(.init(headers: [("Cache-Control", "public, max-age=600")]))
        let second = try await h.send("GET", "/c")
        #expect(!second.status.hit && second.status.stored && second.entry.header("set-cookie") == nil)
        #expect(try await h.send("GET", "/c").status.hit)
    }

    @Test func sharedMaxAgeWinsAndForbidsServingStale() async throws {
        let h = try SharedHarness()
        h.origin.reply(.init(headers: [("Cache-Control", "max-age=600, s-maxage=10")]))
        try await h.send()
        h.clock.advance(by: 11)
        h.origin.reply(.init(error: .unreachable))
        await #expect(throws: CacheFailure.self) { try await h.send() }
    }

    @Test func noCacheResponseIsRevalidatedEveryTime() async throws {
        let h = try SharedHarness()
        h.origin.reply { request in
            request.headers.contains { $0.name == "If-None-Match" } ? .init(status: 304, headers: [("ETag", "\"v1\"")], body: "")
                : .init(headers: [("Cache-Control", "no-cache, max-age=600"), ("ETag", "\"v1\"")])
        }
        try await h.send()
        let second = try await h.send()
        #expect(second.status.description == "larder; fwd=request; fwd-status=304; stored")
        #expect(h.body(second) == ScriptedUpstream.Reply().body)
        #expect(h.origin.requests.last?.headers.contains { $0.name == "If-None-Match" && $0.value == "\"v1\"" } == true)
    }

    @Test func varyKeepsVariantsApart() async throws {
        let h = try SharedHarness()
        h.origin.reply { request in
            let language = request.headers.first { $0.name == "Accept-Language" }?.value ?? "none"
            return .init(headers: [("Cache-Control", "max-age=60"), ("Vary", "Accept-Language")], body: language)
        }
        #expect(h.body(try await h.send("GET", "/v", [("Accept-Language", "de")])) == "de")
        #expect(h.body(try await h.send("GET", "/v", [("Accept-Language", "fr")])) == "fr")
        let de = try await h.send("GET", "/v", [("Accept-Language", "de")])
        let fr = try await h.send("GET", "/v", [("accept-language", "fr")])
        #expect(de.status.hit && h.body(de) == "de")
        #expect(fr.status.hit && h.body(fr) == "fr")
        // A request without the field is a variant of its own.
        #expect(!(try await h.send("GET", "/v").status.hit))
        #expect(h.origin.calls == 3)
    }

    @Test func varyStarIsNeverReused() async throws {
        let h = try SharedHarness()
        h.origin.reply(.init(headers: [("Cache-Control", "max-age=60"), ("Vary", "Foo, *")]))
        try await h.send()
        #expect(!(try await h.send().status.hit))
        #expect(h.origin.calls == 2)
    }

    @Test func unsafeMethodsInvalidateTargetAndLocations() async throws {
        let h = try SharedHarness()
        h.origin.reply(.init(headers: [("Cache-Control", "max-age=600")]))
        for target in ["/r", "/other", "/content"] { try await h.send("GET", target) }
        h.origin.reply(.init(status: 201, headers: [("Location", "http://origin.test/other"), ("Content-Location", "/content")]))
        let post = try await h.send("POST", "/r", [("Content-Type", "text/plain")], body: "payload")
        #expect(post.status.description == "larder; fwd=method; fwd-status=201")
        #expect(h.origin.requests.last?.method == .post)
        #expect(h.origin.requests.last?.body == Array("payload".utf8))
        h.origin.reply(.init(headers: [("Cache-Control", "max-age=600")]))
        for target in ["/r", "/other", "/content"] {
            #expect(!(try await h.send("GET", target).status.hit), "\(target)")
        }
    }

    @Test func failedUnsafeMethodInvalidatesNothing() async throws {
        let h = try SharedHarness()
        try await h.send()
        h.origin.reply(.init(status: 500, headers: []))
        try await h.send("DELETE", "/r")
        try await h.send("M-SEARCH", "/r")
        #expect(try await h.send().status.hit)
    }

    @Test func nonGetMethodsAreNeverAnsweredFromTheCache() async throws {
        let h = try SharedHarness()
        try await h.send()
        for method in ["POST", "PUT", "OPTIONS", "PURGE"] {
            let answer = try await h.send(method, "/r")
            #expect(!answer.status.hit)
            #expect(h.origin.requests.last?.method.description == method)
        }
        #expect(h.origin.calls == 5)
    }

    @Test func notModifiedUpdatesStoredHeadersButNotContentLength() async throws {
        let h = try SharedHarness()
        h.origin.reply(.init(headers: [("Cache-Control", "max-age=1"), ("ETag", "\"v1\""), ("X-Version", "1"), ("Content-Length", "3")]))
        try await h.send()
        h.clock.advance(by: 5)
        h.origin.reply(.init(status: 304, headers: [("Cache-Control", "max-age=100"), ("ETag", "\"v1\""), ("X-Version", "2"),
                                                    ("Content-Length", "0")], body: ""))
        let revalidated = try await h.send()
        #expect(revalidated.entry.status == 200 && h.body(revalidated) == ScriptedUpstream.Reply().body)
        #expect(revalidated.entry.header("X-Version") == "2")
        #expect(revalidated.entry.header("Content-Length") == "3")
        #expect(h.origin.requests.last?.headers.contains { $0.name == "If-None-Match" && $0.value == "\"v1\"" } == true)
        #expect(try await h.send().status.hit)  // fresh again for 100 s
    }

    @Test func headResponseFreshensTheStoredGet() async throws {
        let h = try SharedHarness()
        h.origin.reply(.init(headers: [("Cache-Control", "max-age=1"), ("ETag", "\"v1\""), ("X-Version", "1")]))
        try await h.send()
        h.clock.advance(by: 5)
        h.origin.reply(.init(headers: [("Cache-Control", "max-age=100"), ("ETag", "\"v1\""), ("X-Version", "2")]))
        let head = try await h.send("HEAD")
        #expect(h.origin.requests.last?.method == .head)
        #expect(head.entry.header("X-Version") == "2")
        let get = try await h.send()
        #expect(get.status.hit && h.body(get) == ScriptedUpstream.Reply().body && get.entry.header("X-Version") == "2")
        #expect(h.origin.calls == 2)
    }

    @Test func clientConditionalsAndRangesAreNotForwarded() async throws {
        let h = try SharedHarness()
        try await h.send("GET", "/r", [("If-None-Match", "\"v1\""), ("Range", "bytes=0-1"), ("X-Keep", "yes")])
        let sent = try #require(h.origin.requests.last).headers.map(\.name)
        #expect(sent == ["X-Keep"])
    }

    @Test func staleIfErrorCoversErrorStatusesAndDroppedConnections() async throws {
        let h = try SharedHarness()
        h.origin.reply(.init(headers: [("Cache-Control", "max-age=10, stale-if-error=60")]))
        try await h.send()
        h.clock.advance(by: 20)
        h.origin.reply(.init(status: 503, headers: []))
        let onStatus = try await h.send()
        #expect(onStatus.status.description == "larder; fwd=stale; fwd-status=503; detail=stale-if-error")
        #expect(h.body(onStatus) == ScriptedUpstream.Reply().body)
        h.origin.reply(.init(error: .unreachable))
        #expect(try await h.send().status.detail == .staleIfError)
        h.clock.advance(by: 60)  // past the window: a 503 is passed on
        h.origin.reply(.init(status: 503, headers: []))
        #expect(try await h.send().entry.status == 503)
    }

    @Test func disconnectedOriginServesStaleUnlessForbidden() async throws {
        let h = try SharedHarness()
        h.origin.reply(.init(headers: [("Cache-Control", "max-age=10")]))
        try await h.send("GET", "/plain")
        h.origin.reply(.init(headers: [("Cache-Control", "max-age=10, must-revalidate")]))
        try await h.send("GET", "/strict")
        h.clock.advance(by: 20)
        h.origin.reply(.init(error: .unreachable))
        #expect(try await h.send("GET", "/plain").status.detail == .disconnected)
        await #expect(throws: CacheFailure.self) { try await h.send("GET", "/strict") }
        // An error status is an answer, not a disconnection: passed on without stale-if-error.
        h.origin.reply(.init(status: 502, headers: []))
        #expect(try await h.send("GET", "/plain").entry.status == 502)
    }

    @Test func staleWhileRevalidateAnswersAtOnceAndRefreshesOnce() async throws {
        let h = try SharedHarness()
        h.origin.reply(.init(headers: [("Cache-Control", "max-age=10, stale-while-revalidate=60")], body: "old"))
        try await h.send()
        h.clock.advance(by: 15)
        h.origin.reply(.init(headers: [("Cache-Control", "max-age=10, stale-while-revalidate=60")], body: "new"))
        let stale = try await h.send()
        #expect(stale.status.hit && stale.status.ttl == -5 && h.body(stale) == "old")
        #expect(await eventually { h.origin.calls == 2 })
        #expect(await eventually { (try? await h.send()).map { h.body($0) == "new" } ?? false })
        #expect(h.origin.calls == 2)
    }

    @Test func ageCountsTheOriginsAgeAndDate() async throws {
        let h = try SharedHarness()
        h.origin.reply(.init(headers: [("Cache-Control", "max-age=600"), ("Age", "100"),
                                       ("Date", HTTPDate.format(h.clock.now().addingTimeInterval(-30)))]))
        #expect(try await h.send().age == 100)
        h.clock.advance(by: 7)
        #expect(try await h.send().age == 107)
    }

    @Test func targetedCacheControlOverridesCacheControl() async throws {
        let h = try SharedHarness()
        h.origin.reply(.init(headers: [("Cache-Control", "no-store"), ("CDN-Cache-Control", "max-age=60")]))
        try await h.send("GET", "/cdn")
        #expect(try await h.send("GET", "/cdn").status.hit)
        h.origin.reply(.init(headers: [("Cache-Control", "max-age=600"), ("CDN-Cache-Control", "private")]))
        try await h.send("GET", "/private")
        #expect(!(try await h.send("GET", "/private").status.hit))
        // Invalid as a structured field: ignored, so Cache-Control's no-store stands.
        h.origin.reply(.init(headers: [("Cache-Control", "no-store"), ("CDN-Cache-Control", "max-age=\"60\"")]))
        try await h.send("GET", "/invalid")
        #expect(!(try await h.send("GET", "/invalid").status.hit))
    }

    @Test func entriesSurviveInTheDiskTier() async throws {
        let directory = temporaryDirectory()
        let clock = ManualClock()
        let origin = ScriptedUpstream(clock: clock)
        origin.reply { request in .init(headers: [("Cache-Control", "max-age=60"), ("Vary", "Accept")], body: request.url) }
        func cache() throws -> Cache {
            Cache(route: "http://o", policy: .sharedCache, memory: MemoryTier(budget: 1 << 20),
                  disk: try DiskTier(directory: directory, budget: 1 << 24), fetcher: origin, clock: clock) { _, entry in .plain(entry) }
        }
        let first = try cache()
        let request = CacheRequest(method: .get, resource: "/d?x=1", url: "http://o/d?x=1", headers: [("Accept", "application/json")])
        _ = await first.answer(request)
        await first.waitForDiskWrites()
        let second = try cache()
        let answer = try await second.answer(request).get()
        #expect(answer.status.description.hasPrefix("larder; hit;") && answer.status.detail == .disk)
        #expect(String(decoding: answer.entry.body.inMemory ?? [], as: UTF8.self) == "http://o/d?x=1")
        #expect(origin.calls == 1)
    }
}
