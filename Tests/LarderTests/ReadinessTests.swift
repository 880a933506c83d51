import Foundation
import HTTPCore
import HTTPServer
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// `/readyz` as a client reads it: one key per check, whatever the routes share.
@Suite(.timeLimit(.minutes(1))) struct ReadinessTests {
    /// The member names of the `checks` object, in order and with repeats, read from the raw
    /// text (a JSON parser keeps one of each name and hides a repeat).
    static func checkNames(_ body: String) -> [String] {
        guard let start = body.range(of: "\"checks\":{") else { return [] }
        let pattern = try! NSRegularExpression(pattern: #""((?:[^"\\]|\\.)*)":\[\{"#)
        let text = String(body[start.upperBound...])
        return pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { String(text[Range($0.range(at: 1), in: text)!]) }
    }

    /// An origin URL where nothing listens: every request to it fails to connect.
    static func deadOrigin() async throws -> String {
        let origin = try TestOrigin()
        let url = origin.url
        await origin.stop()
        return url
    }

    @Test func threeRoutesToOneOriginGiveOneKeyEachAndAWarningIsNeverHidden() async throws {
        let dead = try await Self.deadOrigin()
        try await withLarder({ settings in
            settings.builtInRoutes = []
            settings.routes = ["/a", "/b", "/c"].map { RouteMount("\($0)=\(dead)")! }
        }) { h in
            // Five connection failures in a row pause the route behind /a; /b and /c stay open.
            for _ in 0..<5 { #expect(try await h.get("/a/x").status == 502) }
            let ready = try await h.get("/readyz")
            #expect(ready.status == 200)
            let names = Self.checkNames(ready.text)
            #expect(names.count > 3)
            #expect(names.count == Set(names).count, "\(ready.text)")
            #expect(ready.text.hasPrefix("{\"status\":\"warn\""))
            // Whichever parser reads it, one check still says the pause.
            let parsed = try JSONSerialization.jsonObject(with: Data(ready.text.utf8)) as? [String: Any]
            let checks = parsed?["checks"] as? [String: [[String: Any]]] ?? [:]
            #expect(checks.values.contains { $0.first?["status"] as? String == "warn" })
        }
    }

    /// The public port names each route, never where it goes: no origin host, port, base path
    /// or user, and not libcurl's words about a failure (which name the host). The admin
    /// listener has them, the password redacted.
    @Test func thePublicReadinessNamesRoutesAndOnlyTheAdminListenerNamesOrigins() async throws {
        let origin = try TestOrigin()
        let port = origin.server.port!
        let dead = try await Self.deadOrigin()
        try await withLarder({ settings in
            AdminTests.admin(&settings)
            settings.balanceURL = dead + "/balance"
            settings.routes = [RouteMount("/api=http://svc-user:hunter2@127.0.0.1:\(port)/internal-base")!]
        }) { h in
            #expect(try await h.get("/api/x").status == 200)
            #expect(try await h.get("/balance").status == 502)
            let ready = try await h.get("/readyz")
            #expect(ready.status == 200)
            let names = Self.checkNames(ready.text)
            #expect(names.contains("route:/api"), "\(ready.text)")
            #expect(names.contains("upstream:balance"))
            for secret in ["127.0.0.1", "\(port)", "internal-base", "svc-user", "hunter2", "origin", "http:"] {
                #expect(!ready.text.contains(secret), "\(secret) in \(ready.text)")
            }
            #expect(ready.text.contains("\"upstream:balance\":[{\"status\":\"warn\",\"output\":\"last request error\"}]"))

            let admin = try await AdminTests.admin(h, "GET", "/readyz")
            #expect(admin.status == 200)
            #expect(admin.header("content-type") == "application/health+json")
            #expect(admin.text.contains("\"route:/api\":[{\"status\":\"pass\",\"origin\":\"http://svc-user:<redacted>@127.0.0.1:\(port)/internal-base\"}]"),
                    "\(admin.text)")
            #expect(!admin.text.contains("hunter2"))
            #expect(admin.text.contains("\"origin\":\"\(dead)/balance\""))
            #expect(try await AdminTests.admin(h, "GET", "/readyz", authorization: nil).status == 401)
            #expect(try await AdminTests.admin(h, "POST", "/readyz").status == 405)
        }
        await origin.stop()
    }
}
