import Foundation
import HTTPCore
import Bodies
import HTTPServer
import Testing
import TestSupport
@testable import Observability
@testable import AccessLogging
@testable import Settings

/// The access line as a log pipeline indexes it, read from the `larder` process's standard
/// output after requests over a real socket: every field there, the query (where credentials
/// travel) kept out of `path` and its credentials out of the line, and a client's user agent
/// cut to its limit and escaped, so no client can forge a field or a line.
@Suite(.timeLimit(.minutes(2))) struct AccessFieldsTests {
    static let body = "0123456789"

    static func origin() throws -> TestOrigin {
        try TestOrigin { _ in HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=60")]), body: body) }
    }

    static func start(format: String, _ origin: TestOrigin) async throws -> (LarderProcess, Int) {
        let larder = try LarderProcess(["serve", "--port", "0", "--log-format", format, "--log-level", "info",
                                        "--built-in-routes", "none", "--route", "/api=\(origin.url)"])
        return (larder, try await larder.waitForPort())
    }

    /// One request with `agent` as its user agent (raw bytes: obs-text included), on a connection of its own.
    static func send(_ port: Int, _ target: String, agent: [UInt8]?, id: String) async throws -> TestResponse {
        let client = try TestClient(port: port)
        var head = Array("GET \(target) HTTP/1.1\r\nHost: l\r\nX-Request-Id: \(id)\r\n".utf8)
        if let agent { head += Array("User-Agent: ".utf8) + agent + [13, 10] }
        try client.send(head + [13, 10])
        return try await client.readResponse()
    }

    /// What the user agents below try: a field of their own, a line of their own, bytes that are not UTF-8.
    static let forging = Array(#"x","status":999,"route":"/forged","y":"\"#.utf8) + [0x09, 0x5C, 0x6E, 0xC3, 0x28, 0xFF]
    static let forgingLogged = #"x","status":999,"route":"/forged","y":"\"# + "\t\\n\u{C3}(\u{FF}"

    @Test func jsonLinesCarryEveryIndexedFieldAndNoClientForgesOne() async throws {
        let origin = try Self.origin()
        let (larder, port) = try await Self.start(format: "json", origin)
        // A user agent of 10 KB, and one whose 256th byte is inside a character: the cut keeps whole characters.
        let long = [UInt8](repeating: 0x61, count: 10_000)
        let straddling = [0x61] + [UInt8](repeating: 0xE9, count: 200)  // é (two bytes in the line) from byte 2 on
        let requests: [(id: String, target: String, agent: [UInt8]?)] = [
            ("plain", "/api/items?token=secret&page=2", Array("curl/8.5".utf8)),
            ("long", "/api/items?Client_Secret=secret", long),
            ("straddling", "/api/items?X-Api-Key=secret", straddling),
            ("forging", "/api/q%22x%0A?access_token=secret", Self.forging),
            ("none", "/api/items", nil),
        ]
        for request in requests {
            let response = try await Self.send(port, request.target, agent: request.agent, id: request.id)
            #expect(response.status == 200 && response.text == Self.body, "\(request.id)")
        }
        // A raw line feed, or a byte that is not a visible character, cannot reach a line: refused before any handler.
        for refused in [Array("evil\nGET /x".utf8), [0x65, 0x00, 0x66]] {
            #expect(try await Self.send(port, "/api/items", agent: refused, id: "refused").status == 400)
        }
        let raw = try TestClient(port: port)
        try raw.send(Array("GET /api/\u{7F}".utf8) + [0xFF, 0xFE] + Array(" HTTP/1.1\r\nHost: l\r\n\r\n".utf8))
        #expect(try await raw.readResponse().status == 400)
        // Quotes and a backslash in the path itself reach the line (the route refuses the backslash, and logs it).
        let quoted = #"/api/q"x"#, backslashed = #"/api/a\b"c"#
        #expect(try await Self.send(port, quoted, agent: nil, id: "quoted").status == 200)
        #expect(try await Self.send(port, backslashed, agent: nil, id: "backslashed").status == 400)
        let ids = requests.map(\.id) + ["quoted", "backslashed"]
        #expect(await eventually { ids.allSatisfy { larder.output.contains("\"request_id\":\"\($0)\"") } })
        larder.signal(SIGTERM)
        #expect(await larder.waitForExit() == 0)
        await origin.stop()

        // Every line of the output is one JSON object, whatever the clients sent.
        var access: [String: [String: Any]] = [:]
        for line in larder.output.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
            if object["log"] as? String == "access", let id = object["request_id"] as? String { access[id] = object }
        }
        #expect(!larder.output.contains("secret") && !larder.output.contains("/forged\""), "\(larder.output)")
        for request in requests {
            let line = try #require(access[request.id], "\(request.id): \(access.keys)")
            #expect(line["method"] as? String == "GET")
            #expect(line["path"] as? String == String(request.target.prefix { $0 != "?" }))
            #expect(line["route"] as? String == "/api" && line["origin"] as? String == origin.url)
            #expect(line["status"] as? Int == 200 && line["bytes"] as? Int == Self.body.utf8.count)
            #expect((line["cache_status"] as? String)?.hasPrefix("larder; ") == true)
            #expect(line["duration_ms"] is Double || line["duration_ms"] is Int)
            #expect(line["client"] as? String == "127.0.0.1")
        }
        #expect(access["plain"]?["user_agent"] as? String == "curl/8.5")
        #expect(access["plain"]?["message"] as? String == "GET /api/items?token=<redacted>&page=2 200")
        #expect(access["long"]?["user_agent"] as? String == String(repeating: "a", count: AccessLog.userAgentLimit))
        #expect(access["straddling"]?["user_agent"] as? String == "a" + String(repeating: "\u{E9}", count: 127))
        #expect(access["forging"]?["user_agent"] as? String == Self.forgingLogged)
        #expect(access["forging"]?["message"] as? String == "GET /api/q%22x%0A?access_token=<redacted> 200")
        #expect(access["forging"]?["status"] as? Int == 200 && access["forging"]?["route"] as? String == "/api")
        #expect(access["none"]?["user_agent"] as? String == "-")
        #expect(access["quoted"]?["path"] as? String == quoted && access["quoted"]?["message"] as? String == "GET \(quoted) 200")
        #expect(access["backslashed"]?["path"] as? String == backslashed && access["backslashed"]?["status"] as? Int == 400)
    }

    @Test func logfmtLinesCarryTheSameFieldsOnOneLineEach() async throws {
        let origin = try Self.origin()
        let (larder, port) = try await Self.start(format: "text", origin)
        #expect(try await Self.send(port, "/api/items?apikey=secret&page=2", agent: Self.forging, id: "forging").status == 200)
        #expect(try await Self.send(port, "/api/items", agent: Array("curl/8.5".utf8), id: "plain").status == 200)
        #expect(await eventually { larder.output.contains("request_id=plain ") && larder.output.contains("request_id=forging ") })
        larder.signal(SIGTERM)
        #expect(await larder.waitForExit() == 0)
        await origin.stop()

        let lines = larder.output.split(separator: "\n")
        #expect(lines.allSatisfy { $0.hasPrefix("time=") }, "\(larder.output)")
        #expect(!larder.output.contains("secret"))
        let forging = try #require(lines.first { $0.contains("request_id=forging ") })
        #expect(forging.contains(#" msg="GET /api/items?apikey=<redacted>&page=2 200" "#), "\(forging)")
        #expect(forging.contains(" method=GET ") && forging.contains(" path=/api/items ") && forging.contains(" route=/api "))
        #expect(forging.contains(" origin=\(origin.url) ") && forging.contains(" status=200 ") && forging.contains(" bytes=10 "))
        // Quotes, backslashes and the tab escaped inside one quoted value: the line's own status is the only one.
        #expect(forging.hasSuffix(#" user_agent="x\",\"status\":999,\"route\":\"/forged\",\"y\":\"\\\t\\n"# + "\u{C3}(\u{FF}\""), "\(forging)")
        #expect(forging.ranges(of: " status=").count == 1)
        let plain = try #require(lines.first { $0.contains("request_id=plain ") })
        #expect(plain.hasSuffix(" user_agent=curl/8.5") && plain.contains(" cache_status=\"larder; "), "\(plain)")
    }

    /// The access line's check and `RedactedURL`'s rewriting agree on what a credential is.
    @Test func aQueryHasACredentialExactlyWhenRedactingItChangesIt() {
        let queries = ["token=x", "a=1&Token=x", "%74oken=x", "%54OKEN=x", "x-api-key=1", "client_secret=", "auth_token=t&b=2",
                       "keys=1", "tokens=1", "a=token", "token", "=x", "&&", "", "sig=1", "signatures=1", "pass-word=1",
                       "%zz=1", "k%65y=v", "page=2&lat=52.52", String(repeating: "a", count: 5000) + "token=1"]
        for query in queries {
            let redacted = RedactedURL.redacted(query: query[...])
            #expect(RedactedURL.hasCredential(query: query[...]) == (redacted != query), "\(query) -> \(redacted)")
        }
        #expect(RedactedURL.hasCredential(query: "page=2&X_API_KEY=k") && RedactedURL.hasCredential(query: "k%65y=v"))
        #expect(!RedactedURL.hasCredential(query: "lat=52.52&lon=13.41"))
    }
}
