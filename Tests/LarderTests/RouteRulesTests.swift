import Foundation
import HTTPCore
import HTTPServer
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// A pass-through route's rules (set in a configuration file) reach a real origin as
/// configured: prefix kept, stripped or replaced, fields set and removed, `Via` and
/// `X-Forwarded-For`.
@Suite(.timeLimit(.minutes(1))) struct RouteRulesTests {
    /// The requests `origin` saw while Larder routed `/api` to it with `rules`, for `requests`
    /// (each a target and extra field lines) sent over one connection.
    static func seen(_ rules: ForwardingRules, _ requests: [(String, String)]) async throws -> [HTTPRequest] {
        let origin = try TestOrigin { _ in HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "no-store")]), body: "ok") }
        do {
            try await withLarder({ settings in
                var mount = RouteMount("/api=\(origin.url)")!
                mount.rules = rules
                settings.routes = [mount]
            }) { larder in
                let client = try TestClient(port: larder.port)
                for (target, fields) in requests {
                    try client.send("GET \(target) HTTP/1.1\r\nHost: larder\r\n\(fields)\r\n")
                    #expect(try await client.readResponse().status == 200)
                }
            }
        } catch {
            await origin.stop()
            throw error
        }
        await origin.stop()
        return origin.requests
    }

    @Test func thePrefixIsKeptStrippedOrReplaced() async throws {
        let targets = [("/api/items?x=1", ""), ("/api?q=2", ""), ("/api/", "")]
        #expect(try await Self.seen(ForwardingRules(), targets).map(\.target) == ["/api/items?x=1", "/api?q=2", "/api/"])
        var strip = ForwardingRules()
        strip.prefixReplacement = ""
        #expect(try await Self.seen(strip, targets).map(\.target) == ["/items?x=1", "/?q=2", "/"])
        var replace = ForwardingRules()
        replace.prefixReplacement = "/v2/"
        #expect(try await Self.seen(replace, targets).map(\.target) == ["/v2/items?x=1", "/v2?q=2", "/v2/"])
    }

    @Test func aPrefixEndingInASlashKeepsIt() {
        var strip = ForwardingRules()
        strip.prefixReplacement = ""
        #expect(strip.target("/api/x", prefix: "/api/") == "/x")
        strip.prefixReplacement = "/v1"
        #expect(strip.target("/api/x/y?z", prefix: "/api/") == "/v1/x/y?z")
        #expect(strip.target("/x", prefix: "/") == "/v1/x")
    }

    @Test func fieldsAreSetAndRemovedAndViaIsSentByDefault() async throws {
        let secret = FileManager.default.temporaryDirectory.appendingPathComponent("larder-key-\(UUID().uuidString)")
        try Data("s3cret\n".utf8).write(to: secret)
        defer { try? FileManager.default.removeItem(at: secret) }
        var rules = ForwardingRules()
        var files = ValueFiles()
        let read = CredentialHeaders.read(["X-Api-Key: @\(secret.path)\nX-Env: prod"], files: &files)
        #expect(read.problems.isEmpty)
        rules.setFields = read.fields
        rules.removeFields = ["Cookie"]
        let seen = try await Self.seen(rules, [("/api/a", "Cookie: session=1\r\nX-Api-Key: client-said\r\n"),
                                               ("/api/b", "Via: 1.0 front\r\n")])
        try #require(seen.count == 2)
        #expect(seen[0].headers.values("x-api-key") == ["s3cret"] && seen[0].headers["x-env"] == "prod")
        #expect(seen[0].headers["cookie"] == nil)
        #expect(seen[0].headers.values("via") == ["1.1 larder"])
        #expect(seen[1].headers.values("via") == ["1.0 front, 1.1 larder"])
        #expect(seen[0].headers["x-forwarded-for"] == nil)
        // The rules as printed name the fields set, never their values.
        var mount = RouteMount("/api=http://o:1")!
        mount.rules = rules
        #expect(mount.description == "/api=http://o:1 (set-fields X-Api-Key X-Env, remove-fields Cookie)")
    }

    @Test func viaCanBeTurnedOffAndXForwardedForOn() async throws {
        var rules = ForwardingRules()
        rules.via = false
        rules.forwardedFor = true
        let seen = try await Self.seen(rules, [("/api/a", ""), ("/api/b", "X-Forwarded-For: 192.0.2.1\r\n")])
        try #require(seen.count == 2)
        #expect(seen[0].headers["via"] == nil)
        #expect(seen[0].headers["x-forwarded-for"] == "127.0.0.1")
        #expect(seen[1].headers["x-forwarded-for"] == "192.0.2.1, 127.0.0.1")
    }

    @Test func aConfigurationFileSetsTheRules() async throws {
        let path = try ConfigFixture.file("""
            routes:
              /api:
                origin: http://127.0.0.1:1
                strip-prefix: true
                set-fields: ["X-Env: prod"]
                remove-fields: [Cookie]
                via: false
                x-forwarded-for: true
              /b:
                origin: http://127.0.0.1:2
                replace-prefix: /v2
            """)
        let settings = try ServeSettings.resolve(flags: [:], environment: [:], file: try await ConfigFile.load(path: path))
        try #require(settings.routes.count == 2)
        let rules = settings.routes[0].rules
        #expect(rules.prefixReplacement == "" && rules.setFields["x-env"] == "prod" && rules.removeFields == ["Cookie"])
        #expect(!rules.via && rules.forwardedFor)
        #expect(settings.routes[1].rules.prefixReplacement == "/v2" && settings.routes[1].rules.via)
        let (bad, lines) = try await ConfigFixture.problems("routes:\n  /a:\n    origin: http://o:1\n    via: sometimes\n    replace-prefix: v2\n")
        #expect(lines == ["\(bad):4: routes./a.via: must be true or false",
                          "\(bad):5: routes./a.replace-prefix: must be a path in normalised form, starting with /"])
    }
}
