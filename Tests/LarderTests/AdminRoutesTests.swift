import Synchronization
import Foundation
import HTTPCore
import HTTPServer
import Locking
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// The admin listener's `GET /routes`: each configured route that stores answers, named as
/// `/metrics` names it (route and upstream), with what its store holds in each tier, over a
/// real socket; the counts add up to the tiers' own in `/metrics`.
@Suite(.timeLimit(.minutes(1))) struct AdminRoutesTests {
    static func origin() throws -> TestOrigin {
        try TestOrigin { request in
            HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=300")]), body: "answer for \(request.path)")
        }
    }

    static func routes(_ h: ServiceHarness, _ query: String = "") async throws -> (TestResponse, [String: [String: Any]]) {
        let response = try await AdminTests.admin(h, "GET", "/routes" + query)
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        let items = (object?["routes"] as? [[String: Any]]) ?? []
        return (response, Dictionary(uniqueKeysWithValues: items.map { ($0["route"] as? String ?? "?", $0) }))
    }

    static func held(_ item: [String: Any]?, _ tier: String) -> (entries: Int, bytes: Int) {
        let counts = item?[tier] as? [String: Any]
        return (counts?["entries"] as? Int ?? -1, counts?["bytes"] as? Int ?? -1)
    }

    /// The value of an unlabelled-but-for-tier gauge in `/metrics`.
    static func gauge(_ metrics: String, _ name: String, tier: String) -> Int? {
        let prefix = "\(name){tier=\"\(tier)\"} "
        return metrics.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { Double($0.dropFirst(prefix.count)) }.map { Int($0) }
    }

    @Test func eachRouteShowsItsUpstreamAndWhatItStoresInEachTier() async throws {
        let (a, b) = (try Self.origin(), try Self.origin())
        try await withLarder({ settings in
            AdminTests.admin(&settings)
            settings.routes = [RouteMount("/api=\(a.url)")!, RouteMount("/media=\(b.url)")!]
        }) { h in
            for target in ["/api/1", "/api/2", "/media/x", "/weather?lat=1&lon=1", "/api/1"] {
                #expect(try await h.get(target).status == 200, "\(target)")
            }
            await h.service.waitForDiskWrites()
            let (response, routes) = try await Self.routes(h)
            #expect(response.status == 200 && response.header("content-type") == "application/json")
            #expect(response.header("cache-control") == "no-store")
            #expect(Set(routes.keys) == ["/api", "/media", "/weather", "/balance"], "\(response.text)")
            #expect(routes["/api"]?["upstream"] as? String == a.url && routes["/media"]?["upstream"] as? String == b.url)
            #expect(routes["/weather"]?["upstream"] as? String == "weather")
            #expect(Self.held(routes["/api"], "memory").entries == 2 && Self.held(routes["/api"], "disk").entries == 2)
            #expect(Self.held(routes["/media"], "memory").entries == 1 && Self.held(routes["/weather"], "memory").entries == 1)
            #expect(Self.held(routes["/balance"], "memory") == (0, 0) && Self.held(routes["/balance"], "disk") == (0, 0))
            #expect(Self.held(routes["/api"], "disk").bytes == 2 * 4096, "\(response.text)")
            // Every entry belongs to a configured route here: the routes' counts are the tiers'.
            let metrics = try await h.get("/metrics").text
            for tier in ["memory", "disk"] {
                let held = routes.values.map { Self.held($0, tier) }
                #expect(held.map(\.entries).reduce(0, +) == Self.gauge(metrics, "larder_cache_entries", tier: tier), "\(tier)\n\(metrics)")
                #expect(held.map(\.bytes).reduce(0, +) == Self.gauge(metrics, "larder_cache_bytes", tier: tier), "\(tier)\n\(metrics)")
            }

            // One route, by its label or its upstream's.
            let (byRoute, oneRoute) = try await Self.routes(h, "?route=%2Fapi")
            #expect(byRoute.status == 200 && Array(oneRoute.keys) == ["/api"])
            let (_, byUpstream) = try await Self.routes(h, "?upstream=\(a.url.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)")
            #expect(Array(byUpstream.keys) == ["/api"])
            #expect(Array(try await Self.routes(h, "?upstream=weather").1.keys) == ["/weather"])
            // A purge shows at once.
            #expect(try await AdminTests.admin(h, "PURGE", "/api/1").text == "{\"purged\":1}")
            #expect(Self.held(try await Self.routes(h, "?route=/api").1["/api"], "memory").entries == 1)

            let unknown = try await AdminTests.admin(h, "GET", "/routes?route=%2Fnope%3Cscript%3E")
            #expect(unknown.status == 404 && unknown.header("content-type") == "application/problem+json")
            #expect(unknown.text.contains("/api (\(a.url))") && !unknown.text.contains("nope"), "\(unknown.text)")
            #expect(try await AdminTests.admin(h, "GET", "/routes?route=%2Fapi&route=%2Fmedia").status == 400)
            #expect(try await AdminTests.admin(h, "POST", "/routes", body: "{}").status == 405)
            #expect(try await AdminTests.admin(h, "GET", "/routes", authorization: nil).status == 401)
            // The public port never serves it.
            #expect(try await h.get("/routes").status == 404)
        }
        for origin in [a, b] { await origin.stop() }
    }

    /// A reload's routes are the ones shown; what a removed route stored stays in the tiers,
    /// counted there (and in `/metrics`) but under no route.
    @Test func aReloadedConfigurationShowsItsOwnRoutes() async throws {
        let origin = try Self.origin()
        let next = Locked<ServeSettings?>(nil)
        try await withLarder(reload: { next.withLock { $0! } }, { settings in
            AdminTests.admin(&settings)
            settings.routes = [RouteMount("/old=\(origin.url)")!]
        }) { h in
            #expect(try await h.get("/old/1").status == 200)
            var changed = h.service.settings
            changed.routes = [RouteMount("/new=\(origin.url)/v2")!]
            next.withLock { $0 = changed }
            #expect(await h.service.reload() == .reloaded(restartNeeded: []))
            let (_, routes) = try await Self.routes(h)
            #expect(Set(routes.keys) == ["/new", "/weather", "/balance"])
            #expect(Self.held(routes["/new"], "memory").entries == 0)
            #expect(try await AdminTests.admin(h, "GET", "/routes?route=%2Fold").status == 404)
        }
        await origin.stop()
    }
}
