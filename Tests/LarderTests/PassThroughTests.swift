import Foundation
import HTTPServer
import Synchronization
import HTTPCore
import Bodies
import Testing
import TestSupport
@testable import Larder
import Locking
@testable import Settings

/// Pass-through routes end to end: a real Larder in this process, real sockets, the real
/// libcurl client, in front of origins that record what reached them.
@Suite(.timeLimit(.minutes(1)))
struct PassThroughTests {
    /// Runs `body` with Larder routing `routes` (prefix → origin) and stops everything after.
    func withRoutes(_ routes: [(String, TestOrigin)], _ body: (ServiceHarness) async throws -> Void) async throws {
        do {
            try await withLarder({ settings in
                settings.routes = routes.map { RouteMount("\($0.0)=\($0.1.url)")! }
            }, body)
        } catch {
            for (_, origin) in routes { await origin.stop() }
            throw error
        }
        for (_, origin) in routes { await origin.stop() }
    }

    static func cacheable(_ body: String = "hello, world", _ extra: [(String, String)] = []) -> TestOrigin.Respond {
        { _ in HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=60"), ("ETag", "\"e1\""),
                                                              ("Content-Type", "text/plain")] + extra), body: body) }
    }

    @Test func forwardsMethodTargetBodyAndEndToEndFieldsOnly() async throws {
        let captured = Locked<(head: String, body: String)>(("", ""))
        let origin = try RawServer { fd, _ in
            let (head, body) = readRequest(fd)
            captured.withLock { $0 = (head, body) }
            let reply = "HTTP/1.1 201 Created\r\nConnection: close, X-Origin-Hop\r\nX-Origin-Hop: 1\r\nKeep-Alive: timeout=1\r\n"
                + "Upgrade: h2c\r\nX-End: 2\r\nContent-Length: 2\r\n\r\nok"
            _ = reply.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        }
        defer { origin.stop() }
        try await withLarder({ $0.routes = [RouteMount("/api=http://127.0.0.1:\(origin.port)")!] }) { larder in
            let client = try TestClient(port: larder.port)
            try client.send("PUT /api/items?id=7&x=%20 HTTP/1.1\r\nHost: larder\r\nContent-Type: application/json\r\n"
                + "Content-Length: 7\r\nX-Trace: abc\r\nConnection: keep-alive, X-Hop\r\nX-Hop: secret\r\nKeep-Alive: timeout=5\r\n"
                + "TE: trailers\r\nUser-Agent: caller/1\r\n\r\n{\"a\":1}")
            let response = try await client.readResponse()
            #expect(response.status == 201)
            #expect(response.text == "ok")
            #expect(response.header("X-End") == "2")
            #expect(response.header("X-Origin-Hop") == nil && response.header("Upgrade") == nil && response.header("Keep-Alive") == nil)
            #expect(response.header("Cache-Status") == "larder; fwd=method; fwd-status=201")
            #expect(response.header("Age") == "0")

            let (head, body) = captured.withLock { $0 }
            let lines = head.split(separator: "\r\n").map(String.init)
            #expect(lines.first == "PUT /api/items?id=7&x=%20 HTTP/1.1")
            #expect(body == "{\"a\":1}")
            let names = Set(lines.dropFirst().compactMap { $0.split(separator: ":").first.map { $0.lowercased() } })
            #expect(names.isSuperset(of: ["host", "content-type", "content-length", "x-trace", "user-agent"]))
            #expect(names.isDisjoint(with: ["x-hop", "keep-alive", "te", "connection", "accept", "expect", "accept-encoding"]), "\(names)")
            #expect(lines.contains("Host: 127.0.0.1:\(origin.port)"))
            #expect(lines.contains("User-Agent: caller/1"))
        }
    }

    /// An answer over the 8 MiB Larder holds in memory is relayed as it arrives through a spool
    /// file, byte for byte, and once whole is stored on disk only; from then on it is sent from its
    /// entry file, a HEAD and a Range on it included (one Content-Range), even from an origin
    /// that ignores Range. Under a route's smaller max-object-size it is relayed each time.
    @Test func aLargeObjectIsSpooledStoredOnDiskAndServedFromItsFile() async throws {
        let size = 64 << 20
        let big = patternBytes(size)
        let origin = try TestOrigin { _ in HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=600")]), body: big) }
        do {
            try await withLarder({ settings in
                var small = RouteMount("/g=\(origin.url)")!
                small.caching.maxObjectSize = 16 << 20
                settings.routes = [RouteMount("/f=\(origin.url)")!, small]
            }) { larder in
                let first = try await larder.get("/f/big")
                #expect(first.status == 200 && sameBytes(first.body, big))
                // Relayed as it arrived, so sent before it could be stored: no `stored`.
                #expect(first.header("Cache-Status") == "larder; fwd=miss; fwd-status=200")
                // Written in the background: wait for the entry's file, renamed into place whole.
                #expect(await Self.fileAppears(larder.cacheDirectory, atLeast: size), "no entry file of the object")
                let again = try await larder.get("/f/big")
                #expect(again.status == 200 && sameBytes(again.body, big))
                #expect(again.header("Cache-Status")?.hasPrefix("larder; hit") == true && again.header("Cache-Status")?.hasSuffix("detail=disk") == true)
                let head = try await larder.get("/f/big", method: "HEAD")
                #expect(head.status == 200 && head.header("Content-Length") == "\(size)" && head.body.isEmpty)
                let part = try await larder.get("/f/big", headers: ["Range: bytes=60000000-60000099"])
                #expect(part.status == 206 && sameBytes(part.body, big[60_000_000...60_000_099]))
                #expect(part.headerValues("Content-Range") == ["bytes 60000000-60000099/\(size)"])
                #expect(part.header("Cache-Status")?.hasPrefix("larder; hit") == true)
                #expect(origin.requests.count == 1)
                for _ in 0..<2 {
                    let relayed = try await larder.get("/g/big")
                    #expect(relayed.status == 200 && relayed.body.count == size)
                    #expect(relayed.header("Cache-Status") == "larder; fwd=miss; fwd-status=200; detail=too-large")
                }
                #expect(origin.requests.count == 3)
            }
        } catch {
            await origin.stop()
            throw error
        }
        await origin.stop()
    }

    /// Whether a file of at least `size` bytes is under `directory` within 20 seconds.
    static func fileAppears(_ directory: String, atLeast size: Int) async -> Bool {
        for _ in 0..<200 {
            let files = FileManager.default.enumerator(atPath: directory)?.compactMap { $0 as? String } ?? []
            let sizes = files.compactMap { try? FileManager.default.attributesOfItem(atPath: directory + "/" + $0)[.size] as? Int }
            if sizes.contains(where: { $0 >= size }) { return true }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// `max-object-size` bounds what is stored, not what is served: a larger answer is relayed
    /// whole, every time, with `detail=too-large` and without `stored`. A route's own limit
    /// (in a configuration file) stands in for the top-level one on that route.
    @Test func anAnswerOverMaxObjectSizeIsRelayedAndNotStored() async throws {
        let asked = Locked<[String]>([])
        let origin = try TestOrigin { request in
            asked.withLock { $0.append(String(request.path)) }
            return HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=60")]),
                                body: [UInt8](repeating: 0x62, count: request.path.hasSuffix("big") ? 4096 : 1024))
        }
        do {
            try await withLarder({ settings in
                var own = RouteMount("/g=\(origin.url)")!
                own.caching.maxObjectSize = 8192
                settings.routes = [RouteMount("/f=\(origin.url)")!, own]
                settings.maxObjectSize = 2048
            }) { larder in
                for _ in 0..<2 {
                    let big = try await larder.get("/f/big")
                    #expect(big.status == 200 && big.body == [UInt8](repeating: 0x62, count: 4096))
                    #expect(big.header("Cache-Status") == "larder; fwd=miss; fwd-status=200; detail=too-large")
                }
                _ = try await larder.get("/f/small")
                let small = try await larder.get("/f/small")
                #expect(small.body.count == 1024 && small.header("Cache-Status")?.hasPrefix("larder; hit") == true)
                _ = try await larder.get("/g/big")
                let own = try await larder.get("/g/big")
                #expect(own.body.count == 4096 && own.header("Cache-Status")?.hasPrefix("larder; hit") == true)
                #expect(asked.withLock { $0 } == ["/f/big", "/f/big", "/f/small", "/g/big"])
            }
        } catch {
            await origin.stop()
            throw error
        }
        await origin.stop()
        let (path, lines) = try await ConfigFixture.problems(
            "routes:\n  /g:\n    origin: http://o\n    max-object-size: 1MiB\n  /bad:\n    origin: http://o\n    max-object-size: 2GiB\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("\(path):7: routes./bad.max-object-size") && lines[0].contains("1KiB to 1GiB"), "\(lines)")
    }

    /// An origin that drops its connection mid-body: the client gets a whole 502, never a
    /// truncated 200, and nothing is stored (the next request goes to the origin again).
    @Test func anOriginDroppingMidBodyIs502AndNothingIsStored() async throws {
        let heads = Atomic<Int>(0)
        let origin = try RawServer { fd, _ in
            RawServer.readHead(fd)
            heads.add(1, ordering: .relaxed)
            RawServer.send(fd, "HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\nContent-Length: 1000\r\n\r\n" + String(repeating: "x", count: 100))
            usleep(20_000)
            RawServer.reset(fd)
        }
        defer { origin.stop() }
        try await withLarder({ $0.routes = [RouteMount("/d=http://127.0.0.1:\(origin.port)")!] }) { larder in
            for attempt in 1...2 {
                let answer = try await larder.get("/d/file")
                #expect(answer.status == 502 && answer.header("Content-Type") == "application/problem+json")
                #expect(answer.header("Cache-Status")?.contains("stored") != true)
                #expect(heads.load(ordering: .relaxed) == attempt)
            }
            await larder.service.waitForDiskWrites()
            #expect(AdminTests.entryFiles(larder.cacheDirectory) == 0)
        }
    }

    @Test func unknownMethodsAndBodiesGoThroughAndAreNeverCached() async throws {
        let origin = try TestOrigin(Self.cacheable())
        try await withRoutes([("/", origin)]) { larder in
            for _ in 0..<2 {
                let client = try TestClient(port: larder.port)
                try client.send("M-SEARCH /thing HTTP/1.1\r\nHost: larder\r\nContent-Length: 3\r\n\r\nabc")
                let response = try await client.readResponse()
                #expect(response.status == 200)
                #expect(response.header("Cache-Status")?.contains("fwd=method") == true)
            }
            #expect(origin.requests.count == 2)
            #expect(origin.requests.allSatisfy { $0.method == .other("M-SEARCH") && $0.body == .bytes(Array("abc".utf8)) })
        }
    }

    @Test func builtInRoutesKeepPriorityAndTheLongestPrefixWins() async throws {
        let root = try TestOrigin { _ in HTTPResponse(status: 200, body: "root") }
        let api = try TestOrigin { _ in HTTPResponse(status: 200, body: "api") }
        try await withRoutes([("/", root), ("/api", api)]) { larder in
            let r1 = try await larder.get("/api/v1")
            #expect(r1.text == "api")
            let r2 = try await larder.get("/api")
            #expect(r2.text == "api")
            let r3 = try await larder.get("/apix")
            #expect(r3.text == "root")
            let r4 = try await larder.get("/anything?q=1")
            #expect(r4.text == "root")
            let weather = try await larder.get("/weather?lat=52.52&lon=13.41")
            #expect(weather.status == 200 && weather.text.contains("temperature"))
            let r5 = try await larder.get("/livez")
            #expect(r5.status == 200)
            // A built-in path keeps its own method rules.
            let r6 = try await larder.get("/weather?lat=1&lon=1", method: "DELETE")
            #expect(r6.status == 405)
            #expect(root.requests.map(\.target) == ["/apix", "/anything?q=1"])
            let metrics = try await larder.get("/metrics")
            #expect(metrics.text.contains("larder_http_requests_total{route=\"/\",status=\"200\"} 2"), "\(metrics.text)")
            #expect(metrics.text.contains("larder_http_requests_total{route=\"/api\",status=\"200\"} 2"), "\(metrics.text)")
            #expect(api.requests.map(\.target) == ["/api/v1", "/api"])
        }
    }

    @Test func getIsCachedWithAgeCacheStatusConditionalsHeadAndRanges() async throws {
        let origin = try TestOrigin(Self.cacheable())
        try await withRoutes([("/", origin)]) { larder in
            let miss = try await larder.get("/doc")
            #expect(miss.status == 200 && miss.text == "hello, world")
            #expect(miss.header("Cache-Status") == "larder; fwd=miss; fwd-status=200; stored")
            larder.clock.advance(by: 7)
            let hit = try await larder.get("/doc")
            #expect(hit.text == "hello, world" && hit.header("Age") == "7")
            #expect(hit.header("Cache-Status") == "larder; hit; ttl=53; detail=memory")
            #expect(hit.header("Content-Type") == "text/plain" && hit.header("ETag") == "\"e1\"")

            let notModified = try await larder.get("/doc", headers: ["If-None-Match: W/\"e1\""])
            #expect(notModified.status == 304 && notModified.body.isEmpty)
            #expect(notModified.header("ETag") == "\"e1\"" && notModified.header("Content-Type") == nil)

            // No Last-Modified stored: the origin's Date stands in for If-Modified-Since.
            let later = try await larder.get("/doc", headers: ["If-Modified-Since: \(HTTPDate.format(epochSeconds: Int(Date().timeIntervalSince1970) + 3600))"])
            #expect(later.status == 304)
            let earlier = try await larder.get("/doc", headers: ["If-Modified-Since: \(HTTPDate.format(epochSeconds: Int(Date().timeIntervalSince1970) - 3600))"])
            #expect(earlier.status == 200 && earlier.text == "hello, world")

            let head = try await larder.get("/doc", method: "HEAD")
            #expect(head.status == 200 && head.header("Content-Length") == "12")

            let range = try await larder.get("/doc", headers: ["Range: bytes=7-"])
            #expect(range.status == 206 && range.text == "world" && range.header("Content-Range") == "bytes 7-11/12")
            let outside = try await larder.get("/doc", headers: ["Range: bytes=50-60"])
            #expect(outside.status == 416 && outside.header("Content-Range") == "bytes */12")
            #expect(origin.requests.count == 1)
            #expect(origin.requests.first?.headers["if-none-match"] == nil)
        }
    }

    @Test func staleAnswersAreRevalidatedAndA304FreshensThem() async throws {
        let origin = try TestOrigin { request in
            var headers = HTTPHeaders([("Cache-Control", "max-age=10"), ("ETag", "\"e1\""), ("X-Served", "first")])
            if request.headers["if-none-match"] == "\"e1\"" {
                headers = HTTPHeaders([("Cache-Control", "max-age=100"), ("ETag", "\"e1\""), ("X-Served", "revalidated")])
                return HTTPResponse(status: 304, headers: headers)
            }
            return HTTPResponse(status: 200, headers: headers, body: "body")
        }
        try await withRoutes([("/", origin)]) { larder in
            let began = Date()
            _ = try await larder.get("/r")
            larder.clock.advance(by: 30)
            let revalidated = try await larder.get("/r")
            #expect(revalidated.status == 200 && revalidated.text == "body" && revalidated.header("X-Served") == "revalidated")
            #expect(revalidated.header("Cache-Status") == "larder; fwd=stale; fwd-status=304; stored")
            #expect(origin.requests.last?.headers["if-none-match"] == "\"e1\"")
            // The test clock runs 30 s ahead of the origin's Date by now, which Age counts
            // (apparent age), so the freshened answer has 100 - 30 - 50 s left, give or take
            // the second the origin's Date is rounded to. The origin's Date is real time,
            // which moved on while the test ran: each real second adds one to what is left.
            larder.clock.advance(by: 50)
            let hit = try await larder.get("/r")
            #expect(hit.text == "body")
            let ttl = hit.header("Cache-Status").flatMap { $0.firstMatch(of: /^larder; hit; ttl=(\d+); detail=memory$/) }.flatMap { Int($0.1) }
            let elapsed = Int(Date().timeIntervalSince(began).rounded(.up))
            #expect((19...(21 + elapsed)).contains(ttl ?? 0), "\(hit.header("Cache-Status") ?? "-") after \(elapsed) s")
            #expect(origin.requests.count == 2)
        }
    }

    @Test func noFreshnessMeansNoReuse() async throws {
        let origin = try TestOrigin { _ in HTTPResponse(status: 200, body: "plain") }
        try await withRoutes([("/", origin)]) { larder in
            let r7 = try await larder.get("/p")
            #expect(r7.header("Cache-Status") == "larder; fwd=miss; fwd-status=200")
            let r8 = try await larder.get("/p")
            #expect(r8.status == 200)
            #expect(origin.requests.count == 2)
        }
    }

    @Test func varyAndInvalidationOverTheWire() async throws {
        let origin = try TestOrigin { request in
            if request.method != .get { return HTTPResponse(status: 204) }
            let language = request.headers["accept-language"] ?? "none"
            return HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=600"), ("Vary", "Accept-Language")]),
                                body: language)
        }
        try await withRoutes([("/", origin)]) { larder in
            let r9 = try await larder.get("/v", headers: ["Accept-Language: de"])
            #expect(r9.text == "de")
            let r10 = try await larder.get("/v", headers: ["Accept-Language: fr"])
            #expect(r10.text == "fr")
            let de = try await larder.get("/v", headers: ["Accept-Language: de"])
            #expect(de.text == "de" && de.header("Cache-Status")?.hasPrefix("larder; hit") == true)
            #expect(origin.requests.count == 2)

            let r11 = try await larder.get("/v", method: "POST")
            #expect(r11.status == 204)
            let r12 = try await larder.get("/v", headers: ["Accept-Language: de"])
            #expect(r12.header("Cache-Status")?.hasPrefix("larder; fwd=miss") == true)
            #expect(origin.requests.count == 4)
        }
    }

    @Test func staleIfErrorCoversAnOriginThatDropsTheConnection() async throws {
        let served = Atomic<Int>(0)
        let origin = try RawServer { fd, _ in
            _ = readRequest(fd)
            guard served.add(1, ordering: .relaxed).newValue == 1 else { return }  // later connections: closed, no reply
            let reply = "HTTP/1.1 200 OK\r\nCache-Control: max-age=1, stale-if-error=600\r\nConnection: close\r\nContent-Length: 5\r\n\r\nfirst"
            _ = reply.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        }
        defer { origin.stop() }
        try await withLarder({ $0.routes = [RouteMount("/=http://127.0.0.1:\(origin.port)")!] }) { larder in
            let r13 = try await larder.get("/s")
            #expect(r13.text == "first")
            larder.clock.advance(by: 30)
            let stale = try await larder.get("/s")
            #expect(stale.status == 200 && stale.text == "first")
            #expect(stale.header("Cache-Status") == "larder; fwd=stale; detail=stale-if-error")
            #expect(served.load(ordering: .relaxed) >= 2)
            // Nothing stored for this one: the dropped connection is a 502 problem.
            let nothing = try await larder.get("/never")
            #expect(nothing.status == 502 && nothing.header("Content-Type") == "application/problem+json")
        }
    }
}

/// Reads one request (head, then a Content-Length body) from a raw socket, within 5 s.
func readRequest(_ fd: Int32) -> (head: String, body: String) {
    var bytes: [UInt8] = []
    let deadline = ContinuousClock.now + .seconds(5)
    var chunk = [UInt8](repeating: 0, count: 4096)
    func complete() -> (String, String)? {
        guard let end = TestClient.find([13, 10, 13, 10], in: bytes) else { return nil }
        let head = String(decoding: bytes[..<end], as: UTF8.self)
        let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
        guard bytes.count >= end + 4 + length else { return nil }
        return (head, String(decoding: bytes[(end + 4)..<(end + 4 + length)], as: UTF8.self))
    }
    while ContinuousClock.now < deadline {
        if let done = complete() { return done }
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, 50) > 0 else { continue }
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { break }
        bytes.append(contentsOf: chunk[0..<n])
    }
    return complete() ?? (String(decoding: bytes, as: UTF8.self), "")
}

