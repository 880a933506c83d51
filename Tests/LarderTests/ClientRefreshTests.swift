import Foundation
import HTTPCore
import CacheVocabulary
import HTTPServer
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// A client's demand to refresh a fresh stored answer on a pass-through route (`no-cache`,
/// `max-age=0`, `Pragma: no-cache`), by the route's `client-refresh`: ignored by default (as
/// nginx and Varnish do), honoured as RFC 9111 says, or limited to one per key per interval.
@Suite(.timeLimit(.minutes(1))) struct ClientRefreshTests {
    static let forcing = [["Cache-Control: no-cache"], ["Cache-Control: max-age=0"], ["Pragma: no-cache"],
                          ["Cache-Control: min-fresh=3600"]]

    /// Larder with one route `/r` to a cacheable origin, `client-refresh` as given (nil: the default).
    func withRoute(_ refresh: ClientRefresh?, _ body: (ServiceHarness, TestOrigin) async throws -> Void) async throws {
        let origin = try TestOrigin(PassThroughTests.cacheable())
        var mount = RouteMount("/r=\(origin.url)")!
        if let refresh { mount.caching.clientRefresh = refresh }
        do {
            try await withLarder({ $0.routes = [mount] }) { try await body($0, origin) }
        } catch {
            await origin.stop()
            throw error
        }
        await origin.stop()
    }

    @Test func byDefaultNoClientSendsAFreshAnswerBackToTheOrigin() async throws {
        try await withRoute(nil) { h, origin in
            #expect(try await h.get("/r/x").status == 200)
            for headers in Self.forcing {
                h.clock.advance(by: 1)  // so max-age=0 asks for more than the stored answer's age
                let forced = try await h.get("/r/x", headers: headers)
                #expect(forced.status == 200 && forced.text == "hello, world")
                #expect(forced.header("cache-status")?.hasPrefix("larder; hit") == true, "\(headers): \(forced.header("cache-status") ?? "")")
                #expect(forced.header("cache-status")?.contains("detail=refresh-ignored") == true)
            }
            #expect(origin.requests.count == 1)
        }
    }

    @Test func honouredEveryForcedRefreshReachesTheOrigin() async throws {
        try await withRoute(.honour) { h, origin in
            #expect(try await h.get("/r/x").status == 200)
            for headers in Self.forcing {
                h.clock.advance(by: 1)  // so max-age=0 asks for more than the stored answer's age
                let forced = try await h.get("/r/x", headers: headers)
                #expect(forced.status == 200)
                #expect(forced.header("cache-status")?.contains("fwd=request") == true, "\(forced.header("cache-status") ?? "")")
            }
            #expect(origin.requests.count == 1 + Self.forcing.count)
        }
    }

    @Test func limitedOneForcedRefreshPerKeyReachesTheOrigin() async throws {
        try await withRoute(.limit(3600)) { h, origin in
            #expect(try await h.get("/r/x").status == 200)
            h.clock.advance(by: 1)
            let first = try await h.get("/r/x", headers: ["Cache-Control: no-cache"])
            #expect(first.header("cache-status")?.contains("fwd=request") == true)
            h.clock.advance(by: 1)
            let second = try await h.get("/r/x", headers: ["Cache-Control: max-age=0"])
            #expect(second.header("cache-status")?.contains("detail=refresh-limited") == true, "\(second.header("cache-status") ?? "")")
            // Another key has its own allowance.
            #expect(try await h.get("/r/y").status == 200)
            #expect(try await h.get("/r/y", headers: ["Pragma: no-cache"]).header("cache-status")?.contains("fwd=request") == true)
            #expect(origin.requests.count == 4)
        }
    }

    /// Only a fresh answer is kept from the origin: a stale one is fetched whatever the setting.
    @Test func aStaleAnswerStillGoesToTheOrigin() async throws {
        let origin = try TestOrigin { _ in HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=0")]), body: "x") }
        try await withLarder({ $0.routes = [RouteMount("/r=\(origin.url)")!] }) { h in
            _ = try await h.get("/r/x")
            h.clock.advance(by: 2)
            _ = try await h.get("/r/x", headers: ["Cache-Control: no-cache"])
            #expect(origin.requests.count == 2)
        }
        await origin.stop()
    }

    @Test func theFileSaysWhichAndRefusesAnythingElse() async throws {
        func read(_ value: String) async throws -> (ClientRefresh?, [String]) {
            let path = try ConfigFixture.file("routes:\n  /r:\n    origin: http://o:8000\n    client-refresh: \(value)\n")
            do {
                let settings = try ServeSettings.resolve(flags: [:], environment: [:], file: try await ConfigFile.load(path: path))
                return (settings.routes.first?.caching.clientRefresh, [])
            } catch {
                return (nil, error.problems)
            }
        }
        #expect(try await read("honour").0 == .honour)
        #expect(try await read("honor").0 == .honour)
        #expect(try await read("ignore").0 == .ignore)
        #expect(try await read("5s").0 == .limit(5))
        for bad in ["0", "sometimes"] {
            let (value, problems) = try await read(bad)
            #expect(value == nil)
            #expect(problems.contains { $0.contains("client-refresh") && $0.contains("honour, ignore, or a duration") }, "\(problems)")
        }
        #expect(RouteMount("/r=http://o")!.caching.clientRefresh == .ignore, "the default")
    }
}
