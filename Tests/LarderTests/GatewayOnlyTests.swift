import Foundation
import HTTPCore
import HTTPServer
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// Built-in routes can be turned off: a gateway-only Larder passes `/weather` and the like
/// to its origins, and keeps its operational paths.
@Suite(.timeLimit(.minutes(1))) struct GatewayOnlyTests {
    @Test func withNoBuiltInRoutesTheirPathsGoToTheOrigin() async throws {
        let origin = try TestOrigin { request in HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "no-store")]),
                                                              body: "origin \(request.path)") }
        try await withLarder({ settings in
            settings.builtInRoutes = []
            settings.routes = [RouteMount("/=\(origin.url)")!]
        }) { h async throws in
            #expect(try await h.get("/weather?lat=1&lon=1").text == "origin /weather")
            #expect(try await h.get("/overview").text == "origin /overview")
            #expect(try await h.get("/livez").status == 200)
            #expect(try await h.get("/metrics").text.contains("larder_http_requests_total"))
            #expect(h.upstream.count("/v1/forecast") == 0)
        }
        await origin.stop()
    }

    @Test func oneBuiltInRouteLeavesTheOtherAndOverviewFree() async throws {
        try await withLarder({ $0.builtInRoutes = ["weather"] }) { h async throws in
            #expect(try await h.get("/weather?lat=1&lon=1").status == 200)
            #expect(try await h.get("/balance").status == 404)
            #expect(try await h.get("/overview").status == 404)
        }
    }

    @Test func aRouteMayTakeOnlyThePathOfABuiltInRouteThatIsOff() throws {
        let on = try? ServeSettings.resolve(flags: ["routes": "/weather=http://o:1"], environment: [:])
        #expect(on == nil)
        let off = try ServeSettings.resolve(flags: ["routes": "/weather=http://o:1,/overview=http://o:2"],
                                            environment: ["LARDER_BUILT_IN_ROUTES": "balance"])
        #expect(off.routes.count == 2 && off.builtInRoutes == ["balance"])
        #expect(off.servedPaths.sorted() == ["/balance", "/healthz", "/livez", "/metrics", "/openapi.yaml", "/readyz"])
        #expect(try ServeSettings.resolve(flags: ["built.in.routes": "none"], environment: [:]).builtInRoutes.isEmpty)
        #expect(throws: ConfigurationError.self) { try ServeSettings.resolve(flags: ["built.in.routes": "weather,news"], environment: [:]) }
    }
}
