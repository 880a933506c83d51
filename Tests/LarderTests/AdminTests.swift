import HTTPServer
import Logging
import Foundation
import Testing
import TestSupport
@testable import Larder
@testable import Admin
@testable import Settings

/// The admin listener: a real Larder with `--admin-port 0`, asked over a real socket, in
/// front of a test upstream (and a pass-through origin where tags and Vary are needed).
@Suite(.timeLimit(.minutes(1))) struct AdminTests {
    static let token = "s3cret-admin-token"

    /// Settings with the admin listener on a free port and the test token.
    static func admin(_ settings: inout ServeSettings) {
        settings.adminPort = 0
        settings.adminToken = token
    }

    /// One admin request on a new connection; `authorization` nil sends none.
    static func admin(_ h: ServiceHarness, _ method: String, _ target: String, body: String? = nil,
                      authorization: String? = "Bearer \(token)", headers: [String] = []) async throws -> TestResponse {
        let client = try TestClient(port: h.service.adminServer!.port!)
        var head = "\(method) \(target) HTTP/1.1\r\nHost: admin\r\n" + headers.map { $0 + "\r\n" }.joined()
        if let authorization { head += "Authorization: \(authorization)\r\n" }
        if let body { head += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n" }
        try client.send(head + "\r\n" + (body ?? ""))
        return try await client.readResponse()
    }

    /// The admin listener binds first; when the public port is then in use the start fails,
    /// and the stop that follows closes the admin listener too and waits for it.
    @Test func aStartThatFailsAtThePublicPortLeavesNoAdminListenerOnceStopped() async throws {
        let taken = try RawServer { _, _ in }
        defer { taken.stop() }
        var settings = ServeSettings()
        settings.port = taken.port
        settings.cacheDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("larder-admin-\(UUID().uuidString)").path
        Self.admin(&settings)
        let service = LarderService(settings: settings, logger: ServiceHarness.quietLogger())
        #expect(throws: ConfigurationError.self) { try service.start() }
        let adminPort = try #require(service.adminServer?.port)
        #expect((try? TestClient(port: adminPort)) != nil, "the admin listener serves until the stop")
        // Its own sockets, by inode: once the port is free another test's listener may take it.
        // Listed again if need be: with hundreds of tests at once, one listing came back empty.
        var listeners = Set<String>()
        for _ in 0..<10 where listeners.isEmpty {
            listeners = Self.listeningSocketInodes(port: adminPort).intersection(Self.ownSocketInodes())
            if listeners.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(!listeners.isEmpty)
        await service.stop()
        #expect(Self.ownSocketInodes().isDisjoint(with: listeners), "the admin listener is closed once stopped")
    }

    /// The inodes of the sockets listening on `port` (IPv4 and IPv6), from /proc/net.
    private static func listeningSocketInodes(port: Int) -> Set<String> {
        let lines = ["/proc/net/tcp", "/proc/net/tcp6"].flatMap { path in
            ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").dropFirst()
        }
        return Set(lines.compactMap { line -> String? in
            let fields = line.split(separator: " ")
            guard fields.count > 9, fields[3] == "0A", let local = fields[1].split(separator: ":").last,
                  Int(local, radix: 16) == port else { return nil }
            return String(fields[9])
        })
    }

    /// The inodes of this process's open sockets.
    private static func ownSocketInodes() -> Set<String> {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return Set(fds.compactMap { fd in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + fd))
                .flatMap { $0.hasPrefix("socket:[") ? String($0.dropFirst(8).dropLast()) : nil }
        })
    }

    private func json(_ response: TestResponse) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    }

    @Test func everyRequestNeedsTheRightBearerToken() async throws {
        try await withLarder(Self.admin) { h in
            let missing = try await Self.admin(h, "POST", "/purge", body: "{\"all\":true}", authorization: nil)
            #expect(missing.status == 401)
            #expect(missing.header("www-authenticate")?.hasPrefix("Bearer") == true)
            #expect(missing.header("content-type") == "application/problem+json")
            #expect(try await Self.admin(h, "POST", "/purge", body: "{\"all\":true}", authorization: "Basic \(Self.token)").status == 401)
            #expect(try await Self.admin(h, "POST", "/purge", body: "{\"all\":true}", authorization: "Bearer wrong").status == 403)
            #expect(try await Self.admin(h, "POST", "/purge", body: "{\"all\":true}", authorization: "Bearer \(Self.token)x").status == 403)
            let right = try await Self.admin(h, "POST", "/purge", body: "{\"all\":true}", authorization: "bearer \(Self.token)")
            #expect(right.status == 200)
            #expect(right.text == "{\"purged\":0}")
            // The public port never serves admin operations.
            #expect(try await h.get("/weather?lat=1&lon=1", method: "PURGE").status == 405)
            #expect(try await h.get("/cache?target=%2Fbalance").status == 404)
        }
    }

    /// The audit trail: one line per admin request, refused ones included, with who asked,
    /// what, the answer and its request id (echoed to the caller); never the token.
    @Test func everyAdminRequestLeavesOneAuditLine() async throws {
        let log = RecordedLog()
        try await withLarder(logger: log.logger(level: .notice), Self.admin) { h in
            let refused = try await Self.admin(h, "POST", "/purge", body: "{\"all\":true}", authorization: "Bearer guess")
            let missing = try await Self.admin(h, "GET", "/cache?target=%2Fbalance", authorization: nil, headers: ["X-Request-Id: probe-7"])
            let purged = try await Self.admin(h, "POST", "/purge", body: "{\"all\":true}")
            #expect(missing.header("x-request-id") == "probe-7")
            let ids = [refused, missing, purged].compactMap { $0.header("x-request-id") }
            #expect(Set(ids).count == 3)
            let lines = log.all.filter { $0.message.hasPrefix("admin ") && $0.metadata["request_id"] != nil }
            #expect(lines.map(\.message) == ["admin POST /purge 403", "admin GET /cache?target=%2Fbalance 401",
                                             "admin POST /purge 200: purged everything: removed 0 stored answer(s)"])
            #expect(lines.map(\.level) == [.warning, .warning, .notice])
            #expect(lines.map { $0.metadata["request_id"] ?? "" } == ids)
            #expect(lines.allSatisfy { $0.metadata["client"] == "127.0.0.1" && $0.metadata["status"] != nil })
            #expect(!log.all.contains { $0.message.contains(Self.token) || $0.metadata.values.contains { $0.contains(Self.token) } })
        }
    }

    @Test func theTokenIsComparedByteForByteWhateverWhereItDiffers() {
        let token = BearerToken("abcdef")
        #expect(token.matches("abcdef"))
        for other in ["abcdeg", "bbcdef", "abcde", "abcdefg", "", "ABCDEF"] { #expect(!token.matches(other), "\(other)") }
        #expect(token.check(authorization: nil) == .missing)
        #expect(token.check(authorization: "Bearer") == .missing)
        #expect(token.check(authorization: "Token abcdef") == .missing)
        #expect(token.check(authorization: "Bearer  abcdef ") == .right)
        #expect(token.check(authorization: "Bearer abcdeg") == .wrong)
    }

    @Test func aPurgeByTargetNormalisesAsThePublicPortDoes() async throws {
        let log = RecordedLog()
        try await withLarder(logger: log.logger(level: .notice), Self.admin) { h in
            #expect(try await h.get("/weather?lat=52.52&lon=13.41").status == 200)
            await h.service.waitForDiskWrites()
            let purged = try await Self.admin(h, "PURGE", "/weather?lon=13.41&lat=52.5201")
            #expect(purged.status == 200)
            #expect(purged.text == "{\"purged\":1}")
            #expect(log.messages(at: .notice).contains("admin PURGE /weather?lon=13.41&lat=52.5201 200: purged /weather?lon=13.41&lat=52.5201: removed 1 stored answer(s)"))
            let after = try await h.get("/weather?lat=52.52&lon=13.41")
            #expect(after.header("cache-status")?.hasPrefix("larder; fwd=miss") == true)
            #expect(h.upstream.count("/v1/forecast") == 2)
            // Targets the public port refuses, or serves nothing at, have nothing stored.
            #expect(try await Self.admin(h, "PURGE", "/weather?lat=91&lon=0").status == 404)
            #expect(try await Self.admin(h, "DELETE", "/cache?target=weather").status == 400)
            #expect(try await Self.admin(h, "PURGE", "/nothing/here").status == 404)
        }
    }

    @Test func aPurgeByTargetRemovesEveryVaryVariantFromBothTiers() async throws {
        let origin = try TestUpstream()
        origin.update { $0.extraHeaders = [("Vary", "Accept-Language")] }
        try await withLarder(upstream: origin, { settings in
            Self.admin(&settings)
            settings.routes = [RouteMount("/p=http://127.0.0.1:\(origin.port)")!]
        }) { h in
            for language in ["en", "de"] { _ = try await h.get("/p/page", headers: ["Accept-Language: \(language)"]) }
            #expect(try await h.get("/p/page", headers: ["Accept-Language: de"]).header("cache-status")?.contains("hit") == true)
            await h.service.waitForDiskWrites()
            let purged = try await Self.admin(h, "PURGE", "/p/./x/../page")
            #expect(purged.text == "{\"purged\":2}")
            for language in ["en", "de"] {
                let after = try await h.get("/p/page", headers: ["Accept-Language: \(language)"])
                #expect(after.header("cache-status")?.hasPrefix("larder; fwd=miss") == true)
            }
            #expect(origin.requests.count == 4)
        }
        await origin.stop()
    }

    /// The target parameter is percent-decoded once, so `é` arrives raw: it names what
    /// `GET /p/caf%C3%A9` stored. A path whose first Character is "/" joined to an emoji
    /// modifier is still a path (404 here, where the public port serves nothing), not a 400.
    @Test func aTargetWithNonASCIINamesWhatThePublicPortStored() async throws {
        let origin = try TestUpstream()
        try await withLarder(upstream: origin, { settings in
            Self.admin(&settings)
            settings.routes = [RouteMount("/p=http://127.0.0.1:\(origin.port)")!]
        }) { h in
            #expect(try await h.get("/p/caf%C3%A9").status == 200)
            await h.service.waitForDiskWrites()
            let inspected = try await Self.admin(h, "GET", "/cache?target=%2Fp%2Fcaf%C3%A9")
            #expect(inspected.status == 200)
            #expect(inspected.text.contains("\"target\":\"/p/café\""))
            let modifier = try await Self.admin(h, "GET", "/cache?target=%2F%F0%9F%8F%BB")
            #expect(modifier.status == 404)
            #expect(try await Self.admin(h, "PURGE", "/p/caf%C3%A9").text == "{\"purged\":1}")
        }
        await origin.stop()
    }

    @Test func aPurgeByTagRemovesWhatCarriesItAndNothingElse() async throws {
        let origin = try TestUpstream()
        try await withLarder(upstream: origin, { settings in
            Self.admin(&settings)
            settings.routes = [RouteMount("/p=http://127.0.0.1:\(origin.port)")!]
        }) { h in
            origin.update { $0.extraHeaders = [("Surrogate-Key", "red  blue")] }
            let tagged = try await h.get("/p/a")
            #expect(tagged.header("surrogate-key") == nil)  // for caches, not clients
            origin.update { $0.extraHeaders = [("Cache-Tag", "green, red")] }
            #expect(try await h.get("/p/b").header("cache-tag") == nil)
            origin.update { $0.extraHeaders = [] }
            _ = try await h.get("/p/c")
            _ = try await h.get("/weather?lat=1&lon=1")

            let purged = try await Self.admin(h, "POST", "/purge", body: "{\"tags\":[\"red\",\"unknown\"]}")
            #expect(purged.text == "{\"purged\":2}")
            #expect(try await h.get("/p/c").header("cache-status")?.contains("hit") == true)
            #expect(try await h.get("/p/a").header("cache-status")?.hasPrefix("larder; fwd=miss") == true)
            #expect(try await h.get("/p/b").header("cache-status")?.hasPrefix("larder; fwd=miss") == true)
            // Built-in routes tag their answers with their name.
            #expect(try await Self.admin(h, "POST", "/purge", body: "{\"tags\":[\"weather\"]}").text == "{\"purged\":1}")
            #expect(try await h.get("/weather?lat=1&lon=1").header("cache-status")?.hasPrefix("larder; fwd=miss") == true)
        }
        await origin.stop()
    }

    @Test func everythingPurgedStaysPurgedAfterARestart() async throws {
        let upstream = try TestUpstream()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("larder-admin-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await withLarder(upstream: upstream, cacheDirectory: directory, Self.admin) { h in
            _ = try await h.get("/weather?lat=1&lon=1")
            _ = try await h.get("/weather?lat=2&lon=2")
            _ = try await h.get("/balance")
            await h.service.waitForDiskWrites()
            #expect(Self.entryFiles(directory) == 3)
            #expect(try await Self.admin(h, "POST", "/purge", body: "{\"all\":true}").text == "{\"purged\":3}")
            #expect(Self.entryFiles(directory) == 0)
        }
        try await withLarder(upstream: upstream, cacheDirectory: directory, Self.admin) { h in
            let after = try await h.get("/balance")
            #expect(after.header("cache-status")?.hasPrefix("larder; fwd=miss") == true)
        }
        await upstream.stop()
    }

    @Test func aTagPurgeAfterARestartFindsDiskEntriesWithoutReadingThemAll() async throws {
        let origin = try TestUpstream()
        origin.update { $0.extraHeaders = [("Surrogate-Key", "news")] }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("larder-admin-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configure: (inout ServeSettings) -> Void = { settings in
            Self.admin(&settings)
            settings.routes = [RouteMount("/p=http://127.0.0.1:\(origin.port)")!]
        }
        try await withLarder(upstream: origin, cacheDirectory: directory, configure) { h in
            for page in ["a", "b"] { _ = try await h.get("/p/\(page)") }
            origin.update { $0.extraHeaders = [] }
            _ = try await h.get("/balance")
        }
        try await withLarder(upstream: origin, cacheDirectory: directory, configure) { h in
            // Once the index has read the files' heads (a purge during the load reaches the
            // files it meets later, but can count only those it knows): a busy machine may
            // take a moment even for three files.
            for _ in 0..<200 where try await h.get("/readyz").text.contains("loading") { try await Task.sleep(for: .milliseconds(50)) }
            let purged = try await Self.admin(h, "POST", "/purge", body: "{\"tags\":[\"news\"]}")
            #expect(purged.text == "{\"purged\":2}")
            #expect(Self.entryFiles(directory) == 1)
        }
        await origin.stop()
    }

    @Test func inspectionShowsWhatIsStoredAndWhere() async throws {
        try await withLarder(Self.admin) { h in
            let target = "/cache?target=%2Fweather%3Flat%3D52.52%26lon%3D13.41"
            let nothing = try await Self.admin(h, "GET", target)
            #expect(nothing.status == 404)
            #expect(nothing.header("content-type") == "application/problem+json")

            _ = try await h.get("/weather?lat=52.52&lon=13.41")
            await h.service.waitForDiskWrites()
            h.clock.advance(by: 7)
            let shown = try await Self.admin(h, "GET", target)
            #expect(shown.status == 200)
            let stored = try #require(try json(shown)["stored"] as? [[String: Any]])
            #expect(stored.count == 1)
            let first = try #require(stored.first)
            #expect(first["route"] as? String == "weather")
            #expect(first["tiers"] as? [String] == ["memory", "disk"])
            #expect(first["status"] as? Int == 200)
            #expect((7...8).contains(first["age"] as? Int ?? -1))
            #expect(first["lifetime"] as? Int == 60)
            #expect(first["etag"] as? String == "\"upstream-v1\"")
            #expect(first["tags"] as? [String] == ["weather"])
            #expect((first["size"] as? Int ?? 0) > 100)
            #expect(first["variant"] as? Bool == false)
            #expect(try await Self.admin(h, "GET", "/cache").status == 400)
        }
    }

    @Test(arguments: ["{", "[]", "{}", "{\"tags\":[]}", "{\"tags\":[\"\"]}", "{\"tags\":\"red\"}", "{\"all\":1}", "{\"all\":false}",
                      "{\"all\":true,\"tags\":[\"red\"]}", "{\"everything\":true}"])
    func aBadPurgeBodyIs400ProblemJSON(_ body: String) async throws {
        try await withLarder(Self.admin) { h in
            let refused = try await Self.admin(h, "POST", "/purge", body: body)
            #expect(refused.status == 400)
            #expect(refused.header("content-type") == "application/problem+json")
        }
    }

    @Test func theAdminPortNeedsATokenFile() throws {
        #expect(throws: ConfigurationError.self) { try ServeSettings.resolve(flags: ["admin.port": "9091"], environment: [:]) }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("token-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try "  abc.DEF-123\n".write(toFile: file, atomically: true, encoding: .utf8)
        let settings = try ServeSettings.resolve(flags: ["admin.port": "9091"], environment: ["LARDER_ADMIN_TOKEN_FILE": file])
        #expect(settings.adminToken == "abc.DEF-123")
        #expect(settings.adminHost == "127.0.0.1")
        try "two words\n".write(toFile: file, atomically: true, encoding: .utf8)
        #expect(throws: ConfigurationError.self) { try ServeSettings.resolve(flags: ["admin.token.file": file], environment: [:]) }
    }

    /// Entry files in a cache directory (its temporary folder aside).
    static func entryFiles(_ directory: String) -> Int {
        let folders = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return folders.filter { $0.count == 2 }.reduce(0) { count, folder in
            count + ((try? FileManager.default.contentsOfDirectory(atPath: directory + "/" + folder))?.count ?? 0)
        }
    }
}
