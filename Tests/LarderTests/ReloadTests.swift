#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPCore
import HTTPServer
import Locking
import Synchronization
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// A reload (`SIGHUP`, `POST /reload`) swaps the routes of a good configuration in whole,
/// keeps every stored entry and the listener, and changes nothing for a bad one.
@Suite(.timeLimit(.minutes(1))) struct ReloadTests {
    /// A switch shared with tasks and closures.
    final class Flag: Sendable {
        private let value: Atomic<Bool>
        init(_ on: Bool) { value = Atomic(on) }
        var isOn: Bool { value.load(ordering: .relaxed) }
        func set(_ on: Bool) { value.store(on, ordering: .relaxed) }
    }

    /// Answers counted as they come.
    final class Count: Sendable {
        private let value = Atomic<Int>(0)
        var now: Int { value.load(ordering: .relaxed) }
        func add() { value.add(1, ordering: .relaxed) }

        /// Waits (at most 20 s) until at least `target` answers have come.
        func reach(_ target: Int) async throws {
            for _ in 0..<400 where now < target { try await Task.sleep(for: .milliseconds(50)) }
        }
    }

    static func origin(_ body: String) throws -> TestOrigin {
        try TestOrigin { _ in HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=60")]), body: body) }
    }

    /// Clients asking the whole time, on keep-alive connections, until `running` is cleared:
    /// how many answers they had and how many were not a 200.
    static func load(port: Int, running: Flag, counted: Count, targets: [String]) async -> (answers: Int, failures: Int) {
        await withTaskGroup(of: (Int, Int).self) { group in
            for client in 0..<4 {
                group.addTask {
                    var (answers, failures) = (0, 0)
                    guard let connection = try? TestClient(port: port) else { return (0, 1) }
                    var next = client
                    while running.isOn {
                        do {
                            try connection.send("GET \(targets[next % targets.count]) HTTP/1.1\r\nHost: l\r\n\r\n")
                            let response = try await connection.readResponse()
                            answers += 1
                            counted.add()
                            if response.status != 200 { failures += 1 }
                        } catch {
                            return (answers, failures + 1)
                        }
                        next += 1
                    }
                    return (answers, failures)
                }
            }
            return await group.reduce(into: (0, 0)) { $0.0 += $1.0; $0.1 += $1.1 }
        }
    }

    @Test func aReloadUnderLoadChangesALifetimeAndAnOriginWithoutAFailedRequest() async throws {
        let upstream = try TestUpstream()
        upstream.update { $0.maxAge = nil }
        let (a, b) = (try Self.origin("from A"), try Self.origin("from B"))
        let next = Locked<ServeSettings?>(nil)
        try await withLarder(reload: { next.withLock { $0! } }, upstream: upstream, { settings in
            settings.weatherTTL = .seconds(600)
            settings.routes = [RouteMount("/api=\(a.url)")!]
        }) { h in
            #expect(try await h.get("/weather?lat=1&lon=1").header("cache-control")?.contains("max-age=600") == true)
            #expect(try await h.get("/api/x").text == "from A")
            var changed = h.service.settings
            changed.weatherTTL = .seconds(30)
            changed.routes = [RouteMount("/api=\(b.url)")!]
            next.withLock { $0 = changed }

            let (running, counted) = (Flag(true), Count())
            async let traffic = Self.load(port: h.port, running: running, counted: counted, targets: ["/weather?lat=1&lon=1", "/api/x", "/livez"])
            // Answers before the reload and after it, however slowly a busy machine serves them.
            try await counted.reach(40)
            let outcome = await h.service.reload()
            let atReload = counted.now
            try await counted.reach(atReload + 40)
            running.set(false)
            let (answers, failures) = await traffic
            #expect(outcome == .reloaded(restartNeeded: []))
            #expect(atReload >= 40 && answers >= atReload + 40 && failures == 0, "\(atReload), then \(answers) answers, \(failures) failures")

            // What was stored before is still served from memory; new answers follow the new routes.
            #expect(try await h.get("/weather?lat=1&lon=1").header("cache-status")?.contains("hit; ttl=") == true)
            #expect(try await h.get("/weather?lat=2&lon=2").header("cache-control")?.contains("max-age=30") == true)
            #expect(try await h.get("/api/y").text == "from B")
            let metrics = try await h.get("/metrics").text
            #expect(metrics.contains("larder_config_reloads_total{result=\"success\"} 1"), "\(metrics)")
        }
        await a.stop()
        await b.stop()
    }

    @Test func aBadReloadChangesNothingAndIsCounted() async throws {
        let a = try Self.origin("from A")
        try await withLarder(reload: { () async throws(ConfigurationError) -> ServeSettings in
            throw ConfigurationError(problems: ["larder.yaml:3: port must be a whole number"])
        }, { settings in
            settings.routes = [RouteMount("/api=\(a.url)")!]
        }) { h in
            #expect(await h.service.reload() == .refused(["larder.yaml:3: port must be a whole number"]))
            #expect(try await h.get("/api/x").text == "from A")
            let metrics = try await h.get("/metrics").text
            #expect(metrics.contains("larder_config_reloads_total{result=\"failure\"} 1"), "\(metrics)")
            #expect(metrics.contains("larder_config_reloads_total{result=\"success\"} 0"), "\(metrics)")
        }
        await a.stop()
    }

    @Test func settingsOnlyARestartChangesKeepTheirValuesAndAreNamed() {
        var running = ServeSettings()
        running.demo = true
        running.weatherURL = "http://127.0.0.1:1/v1/forecast"
        var read = ServeSettings()
        read.port = 9999
        read.memoryLimit = 1 << 20
        read.demo = true
        read.weatherTTL = .seconds(5)
        let (settings, restart) = LarderService.reloadable(read, over: running)
        #expect(restart == ["port", "memory-limit"])
        #expect(settings.port == running.port && settings.memoryLimit == running.memoryLimit)
        #expect(settings.weatherTTL == .seconds(5))
        // Upstreams not given keep pointing at the simulator started with the process.
        #expect(settings.weatherURL == running.weatherURL)
    }

    @Test func theAdminAPIReloadsOrSaysWhyNot() async throws {
        let fails = Flag(true)
        try await withLarder(reload: { () async throws(ConfigurationError) -> ServeSettings in
            if fails.isOn { throw ConfigurationError(problems: ["f.yaml:2: routes./metrics: refused"]) }
            var settings = ServeSettings()
            settings.port = 1
            return settings
        }, { AdminTests.admin(&$0) }) { h in
            let refused = try await AdminTests.admin(h, "POST", "/reload")
            #expect(refused.status == 400 && refused.header("content-type") == "application/problem+json")
            #expect(refused.text.contains("f.yaml:2: routes./metrics: refused"), "\(refused.text)")
            fails.set(false)
            let done = try await AdminTests.admin(h, "POST", "/reload")
            #expect(done.status == 200)
            #expect(done.text.contains("\"restart_needed\":[\"port\""), "\(done.text)")
            #expect(try await AdminTests.admin(h, "GET", "/reload").status == 405)
        }
        try await withLarder({ AdminTests.admin(&$0) }) { h in
            let nothing = try await AdminTests.admin(h, "POST", "/reload")
            #expect(nothing.status == 409 && nothing.text.contains("nothing to reload"), "\(nothing.text)")
        }
    }

    /// A configuration path that became a link to a secret file: the admin API's 400 names
    /// the problem without the file's lines.
    @Test func aReloadOfALinkToASecretFileDoesNotQuoteIt() async throws {
        let target = try ConfigFixture.file(ConfigFixture.shadow, name: "shadow")
        let link = URL(fileURLWithPath: target).deletingLastPathComponent().appendingPathComponent("larder.yaml").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        try await withLarder(reload: { () async throws(ConfigurationError) -> ServeSettings in
            try ServeSettings.resolve(flags: [:], environment: [:], file: try await ConfigFile.load(path: link))
        }, { AdminTests.admin(&$0) }) { h in
            let refused = try await AdminTests.admin(h, "POST", "/reload")
            #expect(refused.status == 400 && refused.text.contains("not a setting Larder knows"), "\(refused.text)")
            #expect(!refused.text.contains("$6$") && !refused.text.contains("h4sh"), "\(refused.text)")
        }
    }

    /// SIGHUP reads the file again and never stops the process: a good file's new route
    /// serves, a bad one is refused with a line and the old routes serve on.
    @Test func sighupReloadsTheFileAndNeverStopsTheProcess() async throws {
        let (a, b) = (try Self.origin("from A"), try Self.origin("from B"))
        let path = try ConfigFixture.file("port: 0\nroutes:\n  /a:\n    origin: \(a.url)\n")
        let larder = try LarderProcess(["serve", "--config", path])
        let port = try await larder.waitForPort()
        func get(_ target: String) async throws -> TestResponse {
            let client = try TestClient(port: port)
            try client.send("GET \(target) HTTP/1.1\r\nHost: l\r\n\r\n")
            return try await client.readResponse()
        }
        func waitForLog(_ text: String, count: Int = 1) async throws {
            for _ in 0..<100 where larder.output.components(separatedBy: text).count - 1 < count {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(larder.output.components(separatedBy: text).count - 1 >= count, "\(larder.output)")
        }
        #expect(try await get("/b/x").status == 404)
        try Data("port: 0\nroutes:\n  /a:\n    origin: \(a.url)\n  /b:\n    origin: \(b.url)\n".utf8).write(to: URL(fileURLWithPath: path))
        larder.signal(SIGHUP)
        try await waitForLog("configuration reloaded")
        #expect(try await get("/b/x").text == "from B")
        try Data("port: 0\nroutes:\n  /metrics:\n    origin: \(a.url)\n".utf8).write(to: URL(fileURLWithPath: path))
        larder.signal(SIGHUP)
        try await waitForLog("configuration reload refused")
        #expect(larder.output.contains("routes./metrics"))
        #expect(try await get("/b/x").text == "from B")
        try Data("port: 1\nroutes:\n  /a:\n    origin: \(a.url)\n".utf8).write(to: URL(fileURLWithPath: path))
        larder.signal(SIGHUP)
        try await waitForLog("configuration reloaded", count: 2)
        #expect(larder.output.contains("port changed and need a restart"))
        #expect(try await get("/a/x").text == "from A")
        larder.signal(SIGTERM)
        #expect(await larder.waitForExit() == 0)
        await a.stop()
        await b.stop()
    }

    @Test func sighupWithoutAFileSaysSoAndServesOn() async throws {
        let larder = try LarderProcess(["serve", "--port", "0"])
        let port = try await larder.waitForPort()
        larder.signal(SIGHUP)
        for _ in 0..<100 where !larder.output.contains("nothing to reload") { try await Task.sleep(for: .milliseconds(50)) }
        #expect(larder.output.contains("nothing to reload"), "\(larder.output)")
        let client = try TestClient(port: port)
        try client.send("GET /livez HTTP/1.1\r\nHost: l\r\n\r\n")
        #expect(try await client.readResponse().status == 200)
        larder.signal(SIGTERM)
        #expect(await larder.waitForExit() == 0)
    }
}
