import HTTPCore
import HTTPServer
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Larder
import Testing
import TestSupport
import Observability

/// The `larder` executable as an operator runs it: real process, real socket, real signals.
@Suite(.timeLimit(.minutes(1))) struct LarderProcessTests {
    @Test func servesLivezOnTheAnnouncedPortAndStopsOnSIGTERM() async throws {
        let larder = try LarderProcess(["serve", "--port", "0"])
        let port = try await larder.waitForPort()
        #expect(port > 0)
        let firstLine = larder.output.split(separator: "\n").first.map(String.init) ?? ""
        #expect(firstLine.hasSuffix(" level=info msg=\"listening on http://127.0.0.1:\(port)\""))
        #expect(firstLine.firstMatch(of: #/^time=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z /#) != nil)

        let client = try TestClient(port: port)
        try client.send("GET /livez HTTP/1.1\r\nHost: t\r\n\r\n")
        let response = try await client.readResponse()
        #expect(response.status == 200)
        #expect(response.header("cache-control") == "no-store")

        larder.signal(SIGTERM)
        #expect(await larder.waitForExit() == 0)
        #expect(await client.waitForClose(within: .seconds(5)))
    }

    /// Standard output is often a pipe whose reader can go away (`larder serve | head`, a
    /// log shipper that dies). The next log line then meets a broken pipe, and the process
    /// must go on serving rather than die of SIGPIPE.
    @Test func aStandardOutputWhoseReaderIsGoneDoesNotStopTheServer() async throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)  // the child gets only its stdout, a dup (ChildProcess closes the rest)
        _ = fcntl(ends[0], F_SETFL, O_NONBLOCK)
        let larder = try LarderProcess(["serve", "--port", "0", "--log-level", "info"], stdout: .descriptor(ends[1]))
        close(ends[1])
        // The listening line comes first; then the reader goes away.
        var text = ""
        var port: Int?
        let deadline = ContinuousClock.now + .seconds(30)
        while port == nil, ContinuousClock.now < deadline {
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = read(ends[0], &chunk, chunk.count)
            if n > 0 { text += String(decoding: chunk[0..<n], as: UTF8.self) } else { try await Task.sleep(for: .milliseconds(20)) }
            port = text.firstMatch(of: /listening on http:\/\/[^\s]+:(\d+)/).flatMap { Int($0.1) }
        }
        close(ends[0])
        let listening = try #require(port, "no listening line: \(text)")
        for _ in 0..<3 {
            // Each answer's access line goes to the broken pipe within the writer's 5 ms batch.
            let client = try TestClient(port: listening)
            try client.send("GET /livez HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try await client.readResponse().status == 200)
            try await Task.sleep(for: .milliseconds(100))
        }
        larder.signal(SIGTERM)
        #expect(await larder.waitForExit() == 0)
    }

    /// Tests spawn children (larder, openssl, redis-server) while other tests hold sockets
    /// opened without CLOEXEC; a child must not keep them, or closing one sends nothing.
    @Test func aSpawnedChildKeepsNoDescriptorOfTheTestProcess() throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)  // inheritable
        defer { ends.forEach { close($0) } }
        let listing = FileManager.default.temporaryDirectory.appendingPathComponent("larder-fds-\(UUID().uuidString)").path
        defer { unlink(listing) }
        let child = try ChildProcess.spawn("/bin/ls", ["/proc/self/fd"], stdout: .file(listing))
        #expect(ChildProcess.wait(child) == 0)
        let numbers = Set(String(decoding: LarderProcess.contents(of: listing), as: UTF8.self).split(separator: "\n").compactMap { Int32($0) })
        #expect(numbers.contains(0) && numbers.contains(1) && numbers.contains(2))
        #expect(numbers.isDisjoint(with: ends), "\(numbers.sorted())")
    }

    @Test func accessLinesAreLogfmtOrJSONWithNumbersAndEchoTheRequestID() async throws {
        for format in ["text", "json"] {
            let larder = try LarderProcess(["serve", "--port", "0", "--log-format", format, "--log-level", "INFO"])
            let port = try await larder.waitForPort()
            for id in ["given-id-1", nil] {
                let client = try TestClient(port: port)
                try client.send("GET /livez HTTP/1.1\r\nHost: t\r\n" + (id.map { "X-Request-Id: \($0)\r\n" } ?? "") + "\r\n")
                let response = try await client.readResponse()
                let echoed = try #require(response.header("x-request-id"))
                if let id { #expect(echoed == id) } else { #expect(!echoed.isEmpty) }
                #expect(await eventually { larder.output.contains(echoed) })
                let line = try #require(larder.output.split(separator: "\n").last { $0.contains(echoed) })
                if format == "text" {
                    #expect(line.contains(" level=info msg=\"GET /livez 200\" "))
                    #expect(line.contains(" client=127.0.0.1 ") && line.contains(" status=200 ") && line.contains(" cache_status=- "))
                    #expect(line.contains(" request_id=\(echoed) ") && line.contains(" bytes=17 "))
                    #expect(line.firstMatch(of: #/ duration_ms=\d+(\.\d+)? /#) != nil)
                } else {
                    let object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                    #expect(object["status"] as? Int == 200)
                    #expect(object["bytes"] as? Int == 17)
                    #expect(object["duration_ms"] is Double || object["duration_ms"] is Int)
                    #expect(object["client"] as? String == "127.0.0.1")
                    #expect(object["request_id"] as? String == echoed)
                }
            }
            #expect(larder.output.contains("settings in use"))
            larder.signal(SIGTERM)
            #expect(await larder.waitForExit() == 0)
        }
    }

    @Test func theListeningLineIsPrintedWhateverTheLogLevel() async throws {
        let larder = try LarderProcess(["serve", "--port", "0", "--log-level", "warn"])
        let port = try await larder.waitForPort()
        #expect(port > 0)
        larder.signal(SIGTERM)
        #expect(await larder.waitForExit() == 0)
    }

    @Test func sigintAlsoStopsCleanly() async throws {
        let larder = try LarderProcess(["serve", "--port", "0"])
        _ = try await larder.waitForPort()
        larder.signal(SIGINT)
        #expect(await larder.waitForExit() == 0)
    }

    @Test func environmentChoosesThePortWhenNoFlagDoes() async throws {
        let larder = try LarderProcess(["serve", "--port", "0"], environment: ["LARDER_PORT": "1", "LARDER_LOG_FORMAT": "json"])
        let port = try await larder.waitForPort()
        #expect(port != 1)  // the flag won
        #expect(larder.output.hasPrefix("{"))  // the environment's log format applied
        #expect(larder.output.contains("\"message\":\"listening on http://127.0.0.1:\(port)\""))
        larder.signal(SIGTERM)
        #expect(await larder.waitForExit() == 0)
    }

    @Test func theHealthcheckAsksWhereLarderPortSays() async throws {
        let larder = try LarderProcess(["serve", "--port", "0"])
        let port = try await larder.waitForPort()
        let live = try LarderProcess(["healthcheck"], environment: ["LARDER_PORT": String(port), "LARDER_HOST": "0.0.0.0"])
        #expect(await live.waitForExit() == 0)
        larder.signal(SIGTERM)
        #expect(await larder.waitForExit() == 0)
        // The same environment once nothing listens there: unhealthy.
        let closed = try LarderProcess(["healthcheck"], environment: ["LARDER_PORT": String(port)])
        #expect(await closed.waitForExit() == 1)
    }

    /// With the file `serve` reads (LARDER_CONFIG, or --config), the healthcheck asks the
    /// port the file gives, not the default; the environment still wins over the file.
    @Test func theHealthcheckAsksWhereTheConfigurationFileSays() async throws {
        let larder = try LarderProcess(["serve", "--port", "0"])
        let port = try await larder.waitForPort()
        let path = try ConfigFixture.file("port: \(port)\nhost: 0.0.0.0\n")
        let byEnvironment = try LarderProcess(["healthcheck"], environment: ["LARDER_CONFIG": path])
        #expect(await byEnvironment.waitForExit() == 0, "\(byEnvironment.errorOutput)")
        let byFlag = try LarderProcess(["healthcheck", "--config", path])
        #expect(await byFlag.waitForExit() == 0, "\(byFlag.errorOutput)")
        let overridden = try LarderProcess(["healthcheck", "--config", path], environment: ["LARDER_PORT": String(closedPort())])
        #expect(await overridden.waitForExit() == 1)
        larder.signal(SIGTERM)
        #expect(await larder.waitForExit() == 0)
        let broken = try LarderProcess(["healthcheck", "--config", path + ".missing"])
        #expect(await broken.waitForExit() == 1)
        #expect(await eventually { broken.errorOutput.hasPrefix("larder healthcheck: ") && broken.errorOutput.contains(".missing") },
                "\(broken.errorOutput)")
    }

    @Test func upstreamCredentialsFromAFileReachTheUpstreamAndNeverTheLog() async throws {
        let upstream = try TestUpstream()
        let secret = FileManager.default.temporaryDirectory.appendingPathComponent("larder-secret-\(UUID().uuidString)").path
        try "Bearer s3cret-token-42\n".write(toFile: secret, atomically: true, encoding: .utf8)
        let larder = try LarderProcess(["serve", "--port", "0", "--log-level", "debug", "--balance-url", upstream.balanceURL,
                                        "--cache-dir", FileManager.default.temporaryDirectory.path + "/larder-cred-\(UUID().uuidString)",
                                        "--balance-header", "Authorization: @\(secret)"])
        let port = try await larder.waitForPort()
        let client = try TestClient(port: port)
        try client.send("GET /balance HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try await client.readResponse().status == 200)
        #expect(upstream.requests.last?.headers["authorization"] == "Bearer s3cret-token-42")
        larder.signal(SIGTERM)
        #expect(await larder.waitForExit() == 0)
        await upstream.stop()
        #expect(larder.output.contains("balance upstream headers: Authorization: <redacted>"))
        #expect(!larder.output.contains("s3cret") && !larder.errorOutput.contains("s3cret"))
    }

    @Test func theHealthcheckDefaultsFollowTheEnvironment() {
        #expect(HealthCheckDefaults.url(environment: [:]) == "http://127.0.0.1:8080/readyz")
        #expect(HealthCheckDefaults.url(environment: ["LARDER_PORT": "9090"]) == "http://127.0.0.1:9090/readyz")
        #expect(HealthCheckDefaults.url(environment: ["LARDER_HOST": "::", "LARDER_PORT": "9090"]) == "http://[::1]:9090/readyz")
        #expect(HealthCheckDefaults.url(environment: ["LARDER_HOST": "10.0.0.5"]) == "http://10.0.0.5:8080/readyz")
        #expect(HealthCheckDefaults.url(environment: ["LARDER_PORT": "nope"]) == "http://127.0.0.1:8080/readyz")
    }

    @Test(arguments: [["serve", "--bogus"], ["serve", "--port", "70000"], ["serve", "--log-format", "yaml"], ["serve", "--route", "api=http://x"],
                      ["serve", "--route", "/metrics=http://x"], ["serve", "--route", "/api=http://x", "--route", "/api=http://y"]])
    func badConfigurationExitsWithStatus2AndOneLine(_ arguments: [String]) async throws {
        let larder = try LarderProcess(arguments)
        #expect(await larder.waitForExit() == 2)
        let lines = larder.errorOutput.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(lines.first?.hasPrefix("larder: ") == true)
    }

    /// A larder built without the OTLP exporter (`make sanitize`'s ThreadSanitizer build
    /// leaves the package's `OTLPExport` trait off) does not start when asked to trace, and
    /// says why; one built with it starts (`make test`'s tracing step follows its spans).
    @Test func aTracingEndpointNeedsABuildWithTheExporter() async throws {
        let larder = try LarderProcess(["serve", "--port", "0", "--tracing-endpoint", "http://127.0.0.1:\(closedPort())"])
        #if OTLPExport
        _ = try await larder.waitForPort()
        larder.signal(SIGTERM)
        #expect(await larder.waitForExit() == 0)
        #else
        #expect(await larder.waitForExit() == 2)
        #expect(await eventually { larder.errorOutput.contains("built without the OTLP exporter") }, "\(larder.errorOutput)")
        #endif
    }

    @Test func aHealthcheckThatFailsSaysWhyOnStandardError() async throws {
        let closed = try LarderProcess(["healthcheck", "--url", "http://127.0.0.1:\(closedPort())/readyz"])
        #expect(await closed.waitForExit() == 1)
        #expect(await eventually { closed.errorOutput.contains("could not be reached") })
        #expect(closed.errorOutput.hasPrefix("larder healthcheck: Larder at http://127.0.0.1:"), "\(closed.errorOutput)")
        #expect(!closed.errorOutput.contains("upstream"), "it is Larder that was not reached: \(closed.errorOutput)")
        let upstream = try TestUpstream()
        upstream.update { $0.status = 503 }
        let refused = try LarderProcess(["healthcheck", "--url", upstream.balanceURL])
        #expect(await refused.waitForExit() == 1)
        #expect(await eventually { refused.errorOutput == "larder healthcheck: Larder at \(upstream.balanceURL) answered 503\n" }, "\(refused.errorOutput)")
        await upstream.stop()
    }

    @Test func aCacheDirectoryThatIsAFileIsSaidInPlainWords() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("larder-file-\(UUID().uuidString)").path
        try "not a directory".write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        for (directory, reason) in [(file, "it is a file, not a directory"), (file + "/cache", "\(file) is a file, not a directory")] {
            let larder = try LarderProcess(["serve", "--port", "0", "--cache-dir", directory])
            #expect(await larder.waitForExit() == 2)
            #expect(await eventually { !larder.errorOutput.isEmpty })
            #expect(larder.errorOutput == "larder: cannot use cache directory \(directory): \(reason)\n")
        }
    }

    @Test func aSecondLarderOnTheSamePortExitsWithStatus2() async throws {
        let first = try LarderProcess(["serve", "--port", "0"])
        let port = try await first.waitForPort()
        // Both would set SO_REUSEPORT; the second must still refuse rather than share the port.
        let second = try LarderProcess(["serve", "--port", "\(port)"])
        #expect(await second.waitForExit() == 2, "\(second.errorOutput)")
        #expect(second.errorOutput.contains("Address already in use"))
        first.signal(SIGTERM)
        #expect(await first.waitForExit() == 0)
    }

    @Test func portInUseExitsWithStatus2() async throws {
        let first = try LarderProcess(["serve", "--port", "0"])
        let port = try await first.waitForPort()
        // SO_REUSEPORT only lets the same user share a port deliberately; a second server
        // must still fail, so the first listener is held without SO_REUSEPORT here.
        let blocker = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(blocker) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(blocker, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(bound == 0)
        listen(blocker, 1)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(blocker, $0, &length) }
        }
        let taken = Int(UInt16(bigEndian: address.sin_port))
        let second = try LarderProcess(["serve", "--port", "\(taken)"])
        #expect(await second.waitForExit() == 2)
        #expect(second.errorOutput.contains("cannot listen"))
        first.signal(SIGTERM)
        #expect(await first.waitForExit() == 0)
        _ = port
    }
}
