import Synchronization
import Foundation
import HTTPCore
import HTTPServer
import Locking
import Testing
import TestSupport
@testable import Larder
@testable import Settings
import CacheVocabulary

/// A pass-through route's caching settings against a real origin: a lifetime by status only
/// where the origin gives none, stale windows, and a cache key without ignored or unsorted
/// query parameters.
@Suite(.timeLimit(.minutes(1))) struct RouteCachingTests {
    /// Runs `body` with `/api` routed to an origin that answers what `respond` says, cached as `caching` says.
    static func withRoute(_ caching: RouteCaching, _ respond: @escaping TestOrigin.Respond,
                          _ body: (ServiceHarness, TestOrigin) async throws -> Void) async throws {
        let origin = try TestOrigin(respond)
        do {
            try await withLarder({ settings in
                var mount = RouteMount("/api=\(origin.url)")!
                mount.caching = caching
                settings.routes = [mount]
            }) { try await body($0, origin) }
        } catch {
            await origin.stop()
            throw error
        }
        await origin.stop()
    }

    /// 200 for `/api/ok…`, 404 for anything else; `max-age=5` when the path ends in `explicit`.
    static let answers: TestOrigin.Respond = { request in
        let headers = request.path.hasSuffix("explicit") ? HTTPHeaders([("Cache-Control", "max-age=5")]) : HTTPHeaders()
        return HTTPResponse(status: request.path.hasPrefix("/api/ok") ? 200 : 404, headers: headers, body: "answer")
    }

    @Test func aLifetimeByStatusAppliesOnlyWhereTheOriginGivesNone() async throws {
        // Without one, an answer with no freshness and no validator is not stored.
        try await Self.withRoute(RouteCaching(), Self.answers) { h, origin in
            for _ in 0..<2 {
                let answer = try await h.get("/api/ok")
                #expect(answer.header("cache-status")?.contains("fwd=") == true)
            }
            #expect(origin.requests.count == 2)
        }
        var caching = RouteCaching()
        caching.lifetimes = [200: .seconds(600)]
        try await Self.withRoute(caching, Self.answers) { h, origin in
            _ = try await h.get("/api/ok")
            let hit = try await h.get("/api/ok")
            #expect(hit.header("cache-status") == "larder; hit; ttl=600; detail=memory", "\(hit.header("cache-status") ?? "")")
            // The origin's own max-age wins.
            _ = try await h.get("/api/ok-explicit")
            #expect(try await h.get("/api/ok-explicit").header("cache-status")?.contains("ttl=5") == true)
            // No lifetime for 404 here: never stored.
            for _ in 0..<2 { _ = try await h.get("/api/missing") }
            #expect(origin.requests.filter { $0.path == "/api/missing" }.count == 2)
        }
        caching.lifetimes = [404: .seconds(60)]
        try await Self.withRoute(caching, Self.answers) { h, origin in
            for _ in 0..<2 { _ = try await h.get("/api/missing") }
            #expect(origin.requests.filter { $0.path == "/api/missing" }.count == 1)
        }
    }

    @Test func staleWindowsApplyWhereTheOriginNamesNone() async throws {
        var caching = RouteCaching()
        caching.lifetimes = [200: .seconds(10)]
        caching.staleIfError = .seconds(3600)
        let failing = Locked(false)
        try await Self.withRoute(caching, { _ in
            failing.withLock { $0 } ? HTTPResponse(status: 503, body: "down") : HTTPResponse(status: 200, body: "fresh")
        }) { h, _ in
            #expect(try await h.get("/api/ok").text == "fresh")
            h.clock.advance(by: 60)
            failing.withLock { $0 = true }
            let standIn = try await h.get("/api/ok")
            #expect(standIn.status == 200 && standIn.text == "fresh")
            #expect(standIn.header("cache-status")?.contains("detail=stale-if-error") == true, "\(standIn.header("cache-status") ?? "")")
        }
    }

    /// Parameter cloaking: an ignored parameter whose value an origin could read as more
    /// parameters (a `;`, or `%3B`, `%26`, `%25` for an origin that decodes before it splits)
    /// stays in the key, so `?page=1&utm=x;page=666` never answers a plain `?page=1`.
    @Test(arguments: ["utm=x;page=666", "utm=x%3Bpage=666", "utm=x%3bpage%3D666", "utm=x%26page%3D666", "utm=x%2526page%253D666"])
    func anIgnoredParameterThatCouldHideAnotherStaysInTheKey(cloak: String) async throws {
        var caching = RouteCaching()
        caching.ignoredQuery = ["utm"]
        #expect(caching.keyTarget("/api/echo?page=1&\(cloak)") == "/api/echo?page=1&\(cloak)")
        #expect(caching.keyTarget("/api/echo?page=1&utm=spring%20sale") == "/api/echo?page=1")
        // Reads the query as Rack or PHP would: decoded (twice, as some stacks do), split on `&` and `;`, the last `page` wins.
        try await Self.withRoute(caching, { request in
            let query = request.target.split(separator: "?", maxSplits: 1).last.map(String.init) ?? ""
            let decoded = (query.removingPercentEncoding ?? query).removingPercentEncoding ?? query
            let page = decoded.split(whereSeparator: { $0 == "&" || $0 == ";" }).last { $0.hasPrefix("page=") }?.dropFirst(5) ?? ""
            return HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=600")]), body: "page \(page)")
        }) { h, origin in
            #expect(try await h.get("/api/echo?page=1&\(cloak)").text == "page 666")
            #expect(try await h.get("/api/echo?page=1").text == "page 1")
            // A plain ignored parameter is still left out of the key.
            let plain = try await h.get("/api/echo?page=1&utm=newsletter")
            #expect(plain.text == "page 1" && plain.header("cache-status")?.hasPrefix("larder; hit") == true)
            #expect(origin.requests.count == 2)
        }
    }

    @Test func theKeyLeavesOutIgnoredParametersAndSortsTheRest() async throws {
        var caching = RouteCaching()
        caching.lifetimes = [200: .seconds(600)]
        caching.ignoredQuery = ["utm_source"]
        caching.sortsQuery = true
        #expect(caching.keyTarget("/api/ok?utm_source=a&b=1&a=2") == "/api/ok?a=2&b=1")
        #expect(caching.keyTarget("/api/ok?utm_source=a") == "/api/ok")
        #expect(caching.keyTarget("/api/ok") == "/api/ok")
        try await Self.withRoute(caching, Self.answers) { h, origin in
            for target in ["/api/ok?b=1&a=2&utm_source=x", "/api/ok?a=2&b=1", "/api/ok?utm_source=y&a=2&b=1"] {
                let answer = try await h.get(target)
                #expect(answer.status == 200)
            }
            // One fetch, which got the parameters as the client sent them.
            #expect(origin.requests.map(\.target) == ["/api/ok?b=1&a=2&utm_source=x"])
        }
    }

    @Test func aConfigurationFileSetsThem() async throws {
        let path = try ConfigFixture.file("""
            routes:
              /api:
                origin: http://127.0.0.1:1
                lifetime: {200: 10m, 404: 1m}
                stale-while-revalidate: 30s
                stale-if-error: 1h
                cache-key: {ignore-query: [utm_source], sort-query: true}
                upstream-timeout: 2s
                upstream-concurrency: 8
                override: [private, Set-Cookie]
            """)
        let settings = try ServeSettings.resolve(flags: [:], environment: [:], file: try await ConfigFile.load(path: path))
        let caching = try #require(settings.routes.first).caching
        #expect(caching.lifetimes == [200: .seconds(600), 404: .seconds(60)])
        #expect(caching.staleWhileRevalidate == .seconds(30) && caching.staleIfError == .seconds(3600))
        #expect(caching.ignoredQuery == ["utm_source"] && caching.sortsQuery)
        #expect(caching.timeout == .seconds(2) && caching.concurrency == 8)
        #expect(caching.overrides == [.private, .setCookie])
        let (bad, lines) = try await ConfigFixture.problems("routes:\n  /a:\n    origin: http://o:1\n    lifetime: {99: 1m, 200: soon}\n    upstream-concurrency: 0\n")
        #expect(lines == ["\(bad):4: routes./a.lifetime: '99' is not a status from 200 to 599",
                          "\(bad):4: routes./a.lifetime: must be a duration (seconds, or with us, ms, s, m, h)",
                          "\(bad):5: routes./a.upstream-concurrency: must be a whole number from 1 to 1024"])
    }
}

/// `override` ignores what the origin says only when asked, and says so in `Cache-Status`.
@Suite(.timeLimit(.minutes(1))) struct RouteOverrideTests {
    static let personal: TestOrigin.Respond = { request in
        let cacheControl = request.path.hasSuffix("revalidate") ? "no-cache, max-age=60" : "private, max-age=60"
        return HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", cacheControl), ("ETag", "\"p1\""),
                                                              ("Set-Cookie", "session=abc")]), body: "page")
    }

    @Test func withoutOverridesPrivateAndCookiesAreNeverStored() async throws {
        try await RouteCachingTests.withRoute(RouteCaching(), Self.personal) { h, origin in
            for _ in 0..<2 {
                let answer = try await h.get("/api/page")
                #expect(answer.header("set-cookie") == "session=abc" && answer.header("cache-control") == "private, max-age=60")
            }
            #expect(origin.requests.count == 2)
        }
    }

    @Test func overriddenTheAnswerIsStoredWithoutItsCookieAndSaysSo() async throws {
        var caching = RouteCaching()
        caching.overrides = [.private, .setCookie, .noCache]
        try await RouteCachingTests.withRoute(caching, Self.personal) { h, origin in
            let first = try await h.get("/api/page")
            let second = try await h.get("/api/page")
            #expect(origin.requests.count == 1)
            for answer in [first, second] {
                #expect(answer.header("set-cookie") == nil, "a cookie is never stored nor passed on")
                // The override is about what Larder stores: clients (and caches after it) still see `private`.
                #expect(answer.header("cache-control") == "private, max-age=60")
                #expect(answer.header("larder-override") == nil)
                #expect(answer.header("cache-status")?.hasSuffix("; override=\"private set-cookie\"") == true,
                        "\(answer.header("cache-status") ?? "")")
            }
            #expect(second.header("cache-status")?.hasPrefix("larder; hit") == true)
            // no-cache ignored: reused without going back to the origin.
            _ = try await h.get("/api/revalidate")
            let reused = try await h.get("/api/revalidate")
            #expect(reused.header("cache-status")?.hasPrefix("larder; hit") == true)
            #expect(reused.header("cache-status")?.contains("override=\"no-cache set-cookie\"") == true)
            #expect(origin.requests.count == 2)
        }
    }

    /// Only `override: [private]`: stored and reused, and every answer, the hit too, keeps the
    /// origin's `Cache-Control` as it was.
    @Test func overridingPrivateKeepsItInWhatClientsGet() async throws {
        var caching = RouteCaching()
        caching.overrides = [.private]
        try await RouteCachingTests.withRoute(caching, { _ in
            HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "private, max-age=60")]), body: "page")
        }) { h, origin in
            let first = try await h.get("/api/page")
            let second = try await h.get("/api/page")
            #expect(origin.requests.count == 1)
            #expect(second.header("cache-status")?.hasPrefix("larder; hit") == true)
            for answer in [first, second] { #expect(answer.header("cache-control") == "private, max-age=60") }
        }
    }

    /// An origin cannot write Larder's own note of overrides: its `private` answer with a
    /// `Larder-Override: private` of its own is not stored on a route without overrides.
    @Test func anOriginsOwnOverrideNoteIsIgnored() async throws {
        try await RouteCachingTests.withRoute(RouteCaching(), { _ in
            HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "private, max-age=60"), ("Larder-Override", "private")]),
                         body: "page")
        }) { h, origin in
            for _ in 0..<2 {
                let answer = try await h.get("/api/page")
                #expect(answer.header("larder-override") == nil && answer.header("cache-status")?.contains("override") == false)
            }
            #expect(origin.requests.count == 2)
        }
    }
}
