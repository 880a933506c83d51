import Foundation
import HTTPCore
import CacheVocabulary
import Bodies
import Synchronization
import HTTPServer
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// Aggregates declared in the configuration, over real sockets: parts from built-in and
/// pass-through routes through the same caches, partial answers, deadlines, stale parts,
/// validators, and a reload that adds one.
@Suite(.timeLimit(.minutes(1))) struct AggregateTests {
    static let rates = #"{"base":"EUR","rates":{"USD":1.1,"GBP":0.85}}"#

    static func origin(_ body: String = rates, cacheControl: String = "max-age=300", status: Int = 200) throws -> TestOrigin {
        try TestOrigin { _ in
            HTTPResponse(status: status, headers: HTTPHeaders([("Cache-Control", cacheControl), ("Content-Type", "application/json")]), body: body)
        }
    }

    /// `/dash`: the weather and the balance (required) and the rates of a pass-through route.
    static func dashboard(_ settings: inout ServeSettings, origin: String, rates: (inout AggregateDeclaration.Part) -> Void = { _ in },
                          deadline: Duration? = nil) {
        settings.routes = [RouteMount("/rates=\(origin)")!]
        var part = AggregateDeclaration.Part(name: "rates", target: PartTarget("/rates/latest?base={currency}")!)
        rates(&part)
        var dash = AggregateDeclaration(path: "/dash", parts: [
            .init(name: "weather", target: PartTarget("/weather?lat={lat}&lon={lon}")!),
            .init(name: "balance", target: PartTarget("/balance")!),
            part,
        ])
        dash.deadline = deadline
        settings.aggregates = [dash]
    }

    static let target = "/dash?lat=52.52&lon=13.41&currency=EUR"

    @Test func threePartsFromBuiltInAndPassThroughRoutes() async throws {
        let origin = try Self.origin()
        try await withLarder({ Self.dashboard(&$0, origin: origin.url, rates: { $0.pointer = "/rates"; $0.fields = ["USD"] }) }) { h async throws in
            let first = try await h.get(Self.target)
            #expect(first.status == 200, "\(first.text)")
            let body = try json(first)
            #expect((body["weather"] as? [String: Any])?["condition"] as? String == "Overcast")
            #expect((body["balance"] as? [String: Any])?["balance"] as? Double == 1234.56)
            #expect(body["rates"] as? [String: Double] == ["USD": 1.1])
            #expect(first.header("cache-control")?.hasPrefix("private, max-age=") == true, "the balance is for its caller only")
            #expect(first.header("larder-missing") == nil)
            let again = try await h.get(Self.target)
            #expect(again.text == first.text && again.header("etag") == first.header("etag"))
            #expect(again.header("cache-status")?.hasPrefix("larder; hit") == true)
            #expect(again.header("larder-parts")?.components(separatedBy: "; hit;").count == 4, "\(again.header("larder-parts") ?? "")")
            #expect(h.upstream.count("/v1/forecast") == 1 && h.upstream.count("/balance") == 1 && origin.requests.count == 1)
            #expect(origin.requests.first?.target == "/rates/latest?base=EUR")
            let metrics = try await h.get("/metrics").text
            #expect(metrics.contains(#"larder_aggregate_parts_total{aggregate="/dash",part="rates",result="hit"} 1"#), "\(metrics)")
            #expect(metrics.contains(#"larder_http_requests_total{route="/dash",status="200"} 2"#))
        }
        await origin.stop()
    }

    /// A part whose origin says `private` to its clients makes the aggregate private, though
    /// Larder stores the part: told to ignore `private` (`override: [private]`), or reading
    /// `CDN-Cache-Control` in its stead. Without `private`, the aggregate is public.
    @Test(arguments: [
        ("private, max-age=300", true, [], "private"), ("private, max-age=300", false, [CacheOverrides.private], "private"),
        ("max-age=300", true, [], "public"), ("max-age=300", false, [CacheOverrides.private], "public"),
    ] as [(String, Bool, CacheOverrides, String)])
    func aPartPrivateToItsClientsMakesTheAggregatePrivate(_ cacheControl: String, _ targeted: Bool, _ overrides: CacheOverrides,
                                                          _ expected: String) async throws {
        let fields = [("Cache-Control", cacheControl), ("Content-Type", "application/json")] + (targeted ? [("CDN-Cache-Control", "max-age=300")] : [])
        let origin = try TestOrigin { _ in HTTPResponse(status: 200, headers: HTTPHeaders(fields), body: Self.rates) }
        try await withLarder({ settings in
            var route = RouteMount("/rates=\(origin.url)")!
            route.caching.overrides = overrides
            settings.routes = [route]
            settings.aggregates = [AggregateDeclaration(path: "/pair", parts: [
                .init(name: "weather", target: PartTarget("/weather?lat={lat}&lon={lon}")!),
                .init(name: "rates", target: PartTarget("/rates/latest")!),
            ])]
        }) { h async throws in
            for _ in 0..<2 {
                let answer = try await h.get("/pair?lat=52.52&lon=13.41")
                #expect(answer.status == 200, "\(answer.text)")
                #expect(answer.header("cache-control")?.hasPrefix(expected + ", max-age=") == true, "\(answer.header("cache-control") ?? "")")
            }
            #expect(origin.requests.count == 1, "the part is stored")
        }
        await origin.stop()
    }

    /// The parts' requests made for one request are used again only for a request with the
    /// same fields: a caller's `no-cache` reaches the parts.
    @Test func aCallersDirectivesReachThePartsEveryTime() async throws {
        let origin = try Self.origin()
        try await withLarder({ Self.dashboard(&$0, origin: origin.url) }) { h async throws in
            #expect(try await h.get(Self.target).status == 200)
            #expect(try await h.get(Self.target).header("cache-status")?.hasPrefix("larder; hit") == true)
            let forced = try await h.get(Self.target, headers: ["Cache-Control: no-cache"])
            #expect(forced.status == 200)
            #expect(h.upstream.count("/v1/forecast") == 2, "the weather part was revalidated")
            #expect(try await h.get(Self.target).header("cache-status")?.hasPrefix("larder; hit") == true)
        }
        await origin.stop()
    }

    /// A part and a direct request for the same key share one upstream call.
    @Test func partsCollapseWithDirectRequestsForTheSameKeys() async throws {
        let upstream = try TestUpstream()
        // Long enough that every request arrives while the first fetch of each key is out, however busy the machine.
        upstream.update { $0.delay = .seconds(2) }
        try await withLarder(upstream: upstream, { Self.dashboard(&$0, origin: "http://127.0.0.1:\(upstream.port)") }) { h async throws in
            try await withThrowingTaskGroup(of: Int.self) { group in
                for target in [Self.target, "/weather?lat=52.52&lon=13.41", "/balance", "/rates/latest?base=EUR", Self.target] {
                    group.addTask { try await h.get(target).status }
                }
                for try await status in group { #expect(status == 200) }
            }
            #expect(upstream.count("/v1/forecast") == 1 && upstream.count("/balance") == 1 && upstream.count("/rates/latest") == 1)
        }
        await upstream.stop()
    }

    @Test func anOptionalPartDownIsNullAndNamedARequiredOneIs502() async throws {
        let origin = try Self.origin("{}", cacheControl: "no-store", status: 500)
        // A deadline no loaded machine reaches: the part is missing for its 500, not for time.
        try await withLarder({ Self.dashboard(&$0, origin: origin.url, rates: { $0.required = false }, deadline: .seconds(30)) }) { h async throws in
            let partial = try await h.get(Self.target)
            #expect(partial.status == 200)
            #expect(try json(partial)["rates"] is NSNull)
            #expect(partial.header("larder-missing") == "rates")
            #expect(partial.header("larder-parts")?.contains(#"rates="larder; fwd=miss; fwd-status=500";missing"#) == true,
                    "\(partial.header("larder-parts") ?? "")")
            #expect(partial.header("cache-control") == "no-store", "a partial answer is not kept")
        }
        try await withLarder({ Self.dashboard(&$0, origin: origin.url) }) { h async throws in
            let failed = try await h.get(Self.target)
            #expect(failed.status == 502)
            #expect(failed.header("content-type") == "application/problem+json")
            #expect(try json(failed)["detail"] as? String == "The rates part cannot be used: its route answered 500.", "\(failed.text)")
        }
        await origin.stop()
    }

    @Test func aPartPastTheDeadlineIsMissingOrFailsTheAggregate() async throws {
        // An origin that reads the request and never answers; the route would wait 30 s for it.
        let silent = try RawServer { fd, server in
            RawServer.readHead(fd)
            server.waitForPeerClose(fd, limit: .seconds(40))
        }
        defer { silent.stop() }
        func configure(required: Bool) -> (inout ServeSettings) -> Void {
            { settings in
                Self.dashboard(&settings, origin: "http://127.0.0.1:\(silent.port)", rates: { $0.required = required }, deadline: .seconds(1))
                settings.routes[0].caching.timeout = .seconds(30)
            }
        }
        // The built-in parts are stored first, so only the silent part waits: a machine busy
        // with other tests may take longer than the deadline to fetch them.
        func storeBuiltInParts(_ h: ServiceHarness) async throws {
            #expect(try await h.get("/weather?lat=52.52&lon=13.41").status == 200)
            #expect(try await h.get("/balance").status == 200)
        }
        try await withLarder(configure(required: false)) { h async throws in
            try await storeBuiltInParts(h)
            let start = ContinuousClock.now
            let partial = try await h.get(Self.target)
            // Generous: a machine busy with other tests delays a Task by seconds; without the
            // deadline this would take the route's 30 s.
            #expect(ContinuousClock.now - start < .seconds(15), "the answer did not wait for the silent part")
            #expect(partial.status == 200)
            #expect(try json(partial)["rates"] is NSNull)
            #expect(partial.header("larder-parts")?.contains(#"rates=none;missing;deadline"#) == true, "\(partial.header("larder-parts") ?? "")")
        }
        try await withLarder(configure(required: true)) { h async throws in
            try await storeBuiltInParts(h)
            let failed = try await h.get(Self.target)
            #expect(failed.status == 504)
            #expect((try json(failed)["detail"] as? String)?.contains("rates part did not answer within the aggregate's deadline of 1000 ms") == true)
        }
    }

    /// A stored part past its freshness stands in when its origin fails or is too slow, as
    /// its stale-if-error allows, and the answer says so.
    @Test func aStalePartStandsInWhenItsOriginFailsOrIsLate() async throws {
        /// What the origin does with each request: 0 answers, 1 fails with 503, 2 never answers.
        final class Mode: Sendable {
            let value = Atomic<Int>(0)
        }
        let mode = Mode()
        let origin = try RawServer { fd, server in
            RawServer.readHead(fd)
            switch mode.value.load(ordering: .relaxed) {
            case 0:
                RawServer.send(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nCache-Control: max-age=10, stale-if-error=3600\r\n"
                               + "ETag: \"r1\"\r\nContent-Length: \(Self.rates.utf8.count)\r\nConnection: close\r\n\r\n" + Self.rates)
            case 1:
                RawServer.send(fd, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            default:
                server.waitForPeerClose(fd, limit: .seconds(40))
            }
        }
        defer { origin.stop() }
        try await withLarder({
            Self.dashboard(&$0, origin: "http://127.0.0.1:\(origin.port)", deadline: .seconds(2))
            $0.routes[0].caching.timeout = .seconds(30)
        }) { h async throws in
            // Every part is stored first, by direct requests (no deadline), and the built-in
            // parts stay fresh throughout: only the rates go stale.
            h.upstream.update { $0.maxAge = 3600 }
            for part in ["/weather?lat=52.52&lon=13.41", "/balance", "/rates/latest?base=EUR"] {
                #expect(try await h.get(part).status == 200)
            }
            let stored = try await h.get(Self.target)
            #expect(stored.status == 200 && stored.header("cache-status")?.hasPrefix("larder; hit") == true, "\(stored.text)")
            h.clock.advance(by: 60)
            mode.value.store(1, ordering: .relaxed)
            let failing = try await h.get(Self.target)
            let parts = failing.header("larder-parts") ?? ""
            #expect(failing.status == 200, "\(failing.text)")
            #expect(parts.contains(#"rates="larder; fwd=stale; fwd-status=503; detail=stale-if-error""#), "\(parts)")
            mode.value.store(2, ordering: .relaxed)
            h.clock.advance(by: 60)
            let late = try await h.get(Self.target)
            #expect(late.status == 200, "\(late.text)")
            #expect(late.header("larder-parts")?.contains(#"rates="larder; fwd=stale; detail=stale-if-error";deadline"#) == true,
                    "\(late.header("larder-parts") ?? "")")
            #expect(late.header("larder-missing") == nil)
        }
    }

    @Test func ifNoneMatchWithTheAggregatesETagIs304() async throws {
        let origin = try Self.origin()
        try await withLarder({ Self.dashboard(&$0, origin: origin.url) }) { h async throws in
            let first = try await h.get(Self.target)
            let etag = try #require(first.header("etag"))
            let notModified = try await h.get(Self.target, headers: ["If-None-Match: \(etag)"])
            #expect(notModified.status == 304 && notModified.body.isEmpty)
            #expect(try await h.get(Self.target, headers: ["If-None-Match: \"other\""]).status == 200)
            origin.answer { _ in HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=300")]), body: #"{"rates":{}}"#) }
            let otherRates = try await h.get("/dash?lat=52.52&lon=13.41&currency=USD")
            #expect(otherRates.status == 200 && otherRates.header("etag") != etag)
        }
        await origin.stop()
    }

    /// The admin API's purge of an aggregate's target purges each part it names.
    @Test func purgingAnAggregatesTargetPurgesEachPart() async throws {
        let origin = try Self.origin()
        try await withLarder({ Self.dashboard(&$0, origin: origin.url); AdminTests.admin(&$0) }) { h async throws in
            #expect(try await h.get(Self.target).status == 200)
            await h.service.waitForDiskWrites()
            let purged = try await AdminTests.admin(h, "PURGE", Self.target)
            #expect(purged.status == 200 && purged.text == "{\"purged\":3}", "\(purged.text)")
            #expect(try await h.get(Self.target).header("larder-parts")?.components(separatedBy: "fwd=miss").count == 4)
            #expect(try await AdminTests.admin(h, "PURGE", "/dash?lat=52.52").status == 404, "a target the public port refuses")
        }
        await origin.stop()
    }

    /// `/openapi.yaml` lists the built-in routes served and the aggregates, no more.
    @Test func theOpenAPIDocumentListsWhatIsServed() async throws {
        try await withLarder({ $0.builtInRoutes = ["weather"] }) { h async throws in
            let document = try await h.get("/openapi.yaml").text
            #expect(document.contains("\n  /weather:\n") && !document.contains("\n  /balance:\n") && !document.contains("\n  /overview:\n"))
            #expect(document.contains("\n  /livez:\n") && document.contains("\ncomponents:\n"))
        }
        let origin = try Self.origin()
        try await withLarder({ Self.dashboard(&$0, origin: origin.url, rates: { $0.required = false }) }) { h async throws in
            let document = try await h.get("/openapi.yaml").text
            #expect(document.contains("\n  /overview:\n    get:\n      operationId: getOverview\n"), "the built-in one, as written")
            #expect(document.contains("        - {name: 'lat', in: query, required: true, schema: {$ref: '#/components/schemas/Latitude'}}\n"))
            #expect(document.contains("        - {name: 'currency', in: query, required: true, schema: {type: string}}\n"))
            #expect(document.contains("                  rates: {}\n") && document.contains("                  balance: {$ref: '#/components/schemas/Balance'}\n"))
        }
        await origin.stop()
    }

    @Test func aReloadAddsAnAggregate() async throws {
        let origin = try Self.origin()
        let upstream = try TestUpstream()
        let url = origin.url
        try await withLarder(reload: {
            var next = ServeSettings()
            (next.weatherURL, next.balanceURL) = (upstream.weatherURL, upstream.balanceURL)
            Self.dashboard(&next, origin: url)
            return next
        }, upstream: upstream, { $0.routes = [RouteMount("/rates=\(url)")!] }) { h async throws in
            #expect(try await h.get(Self.target).status == 404)
            guard case .reloaded = await h.service.reload() else { Issue.record("the reload was refused"); return }
            let added = try await h.get(Self.target)
            #expect(added.status == 200, "\(added.text)")
            #expect(try json(added)["rates"] != nil)
            #expect(try await h.get("/openapi.yaml").text.contains("  /dash:\n    get:\n      operationId: getAggregateDash"))
        }
        await origin.stop()
        await upstream.stop()
    }
}
