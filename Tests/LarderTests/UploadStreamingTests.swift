#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// Uploads through a pass-through route relayed as the client sends them: a real Larder in
/// this process in front of an origin that counts the body bytes it has received, so a test
/// can see them arrive while the client still holds the rest back.
@Suite(.timeLimit(.minutes(1)))
struct UploadStreamingTests {
    static let size = 4 << 20
    static let first = 2 << 20
    static let body = patternBytes(size)

    /// Reads a request's head and `Content-Length` bytes of body, counting them as they come,
    /// then answers 200 with the count and whether they were the expected bytes; or notes
    /// that the body ended short.
    final class Origin: Sendable {
        final class Counts: Sendable {
            let received = Atomic<Int>(0)
            let cutShort = Atomic<Int>(0)
            let chunked = Atomic<Int>(0)
        }
        let counts = Counts()
        let server: RawServer
        var url: String { "http://127.0.0.1:\(server.port)" }
        var received: Int { counts.received.load(ordering: .relaxed) }
        var cutShort: Int { counts.cutShort.load(ordering: .relaxed) }
        /// Requests that came chunked.
        var chunked: Int { counts.chunked.load(ordering: .relaxed) }

        /// `expected`: what the body should be; `slowly`: a pause after each read, so the
        /// origin takes the body more slowly than a client sends it; `lengthOnly`: a chunked
        /// request is answered 411, as an origin that reads a body only by its
        /// `Content-Length` (Python's http.server) fails it.
        init(expected: [UInt8] = UploadStreamingTests.body, slowly: Bool = false, lengthOnly: Bool = false) throws {
            let counts = self.counts
            server = try RawServer { fd, _ in
                // The head and the first body bytes may come in one read.
                var bytes: [UInt8] = []
                var chunk = [UInt8](repeating: 0, count: 64 << 10)
                func more() -> Bool {
                    var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    guard poll(&pfd, 1, 10_000) > 0 else { return false }
                    let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                    guard n > 0 else { return false }
                    bytes += chunk[..<n]
                    if slowly { usleep(2_000) }
                    return true
                }
                while TestClient.find([13, 10, 13, 10], in: bytes) == nil { guard more() else { return } }
                let end = TestClient.find([13, 10, 13, 10], in: bytes)!
                let text = String(decoding: bytes[..<end], as: UTF8.self).lowercased()
                bytes.removeFirst(end + 4)
                counts.received.store(bytes.count, ordering: .relaxed)
                if text.contains("transfer-encoding: chunked") {
                    counts.chunked.add(1, ordering: .relaxed)
                    if lengthOnly {
                        RawServer.send(fd, "HTTP/1.1 411 Length Required\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                        return
                    }
                    // Counted as it arrives (framing included), decoded at its last chunk.
                    while !bytes.suffix(5).elementsEqual(Array("0\r\n\r\n".utf8)), more() { counts.received.store(bytes.count, ordering: .relaxed) }
                    guard let decoded = UploadStreamingTests.dechunked(bytes) else {
                        counts.cutShort.add(1, ordering: .relaxed)
                        return
                    }
                    bytes = decoded
                } else {
                    guard let line = text.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
                          let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) else { return }
                    while bytes.count < length, more() { counts.received.store(bytes.count, ordering: .relaxed) }
                    guard bytes.count == length else {
                        counts.cutShort.add(1, ordering: .relaxed)
                        return
                    }
                }
                let length = bytes.count
                let verdict = "\(length) " + (sameBytes(bytes, expected.prefix(length)) ? "same" : "different")
                RawServer.send(fd, "HTTP/1.1 200 OK\r\nContent-Length: \(verdict.utf8.count)\r\n\r\n\(verdict)")
            }
        }
    }

    /// A chunked body's content (no chunk extensions, no trailers), or nil when it is not whole.
    static func dechunked(_ raw: [UInt8]) -> [UInt8]? {
        var content: [UInt8] = [], at = 0
        while let lineEnd = TestClient.find([13, 10], in: Array(raw[at...])).map({ $0 + at }),
              let size = Int(String(decoding: raw[at..<lineEnd], as: UTF8.self), radix: 16) {
            if size == 0 { return content }
            guard lineEnd + 2 + size + 2 <= raw.count else { return nil }
            content += raw[(lineEnd + 2)..<(lineEnd + 2 + size)]
            at = lineEnd + 2 + size + 2
        }
        return nil
    }

    static func route(_ origin: Origin, timeout: Duration = .seconds(30)) -> (inout ServeSettings) -> Void {
        { settings in
            var route = RouteMount("/up=\(origin.url)")!
            route.caching.timeout = timeout
            settings.routes = [route]
        }
    }

    /// Waits (up to 10 s) until the origin has received at least `count` body bytes.
    static func wait(for origin: Origin, toReceive count: Int) async throws -> Int {
        for _ in 0..<1000 where origin.received < count { try await Task.sleep(for: .milliseconds(10)) }
        return origin.received
    }

    /// The first half of a 4 MiB upload reaches the origin while the client still holds the
    /// rest back; then the whole arrives, byte for byte. Asked to, Larder says `100 Continue`.
    @Test func anUploadReachesTheOriginAsTheClientSendsIt() async throws {
        let origin = try Origin()
        defer { origin.server.stop() }
        try await withLarder(Self.route(origin)) { larder in
            let client = try TestClient(port: larder.port, timeout: .seconds(20))
            try client.send("PUT /up/file HTTP/1.1\r\nHost: larder\r\nExpect: 100-continue\r\nContent-Length: \(Self.size)\r\n\r\n")
            #expect(try await client.readResponse().status == 100)
            try await client.sendOffPool(Array(Self.body[..<Self.first]))
            #expect(try await Self.wait(for: origin, toReceive: Self.first) == Self.first)
            try await client.sendOffPool(Array(Self.body[Self.first...]))
            let response = try await client.readResponse()
            #expect(response.status == 200 && response.text == "\(Self.size) same")
        }
    }

    /// The connection's close does not stop its last request's body: a 4 MiB upload that
    /// says `Connection: close` (or is HTTP/1.0, which closes by default) reaches the origin
    /// whole, and the connection closes after the answer.
    @Test(arguments: ["HTTP/1.1\r\nConnection: close", "HTTP/1.0"])
    func anUploadOnAClosingConnectionReachesTheOriginWhole(version: String) async throws {
        let origin = try Origin()
        defer { origin.server.stop() }
        // The route's default 30 s timeout: under a full parallel run the sending task can
        // start seconds late, and a short timeout would end the body, not the bug.
        try await withLarder(Self.route(origin)) { larder in
            let client = try TestClient(port: larder.port, timeout: .seconds(60))
            try client.send("PUT /up/file \(version)\r\nHost: larder\r\nContent-Length: \(Self.size)\r\n\r\n")
            let sending = Task { try await client.sendOffPool(Self.body) }
            let response = try await client.readResponse()
            #expect(response.status == 200 && response.text == "\(Self.size) same", "\(response.status) \(response.text)")
            #expect(response.header("connection") == "close")
            #expect(await client.waitForClose(within: .seconds(5)))
            _ = try? await sending.value
        }
    }

    /// A client that goes away mid-upload cuts the origin's request short; the origin is not
    /// blamed (the next upload goes through, no backoff) and Larder answers on.
    @Test func aClientLeavingMidUploadCutsTheOriginsRequestShort() async throws {
        let origin = try Origin()
        defer { origin.server.stop() }
        try await withLarder(Self.route(origin)) { larder in
            let client = try TestClient(port: larder.port)
            try client.send("POST /up/file HTTP/1.1\r\nHost: larder\r\nContent-Length: \(Self.size)\r\n\r\n")
            try await client.sendOffPool(Array(Self.body[..<Self.first]))
            _ = try await Self.wait(for: origin, toReceive: Self.first)
            client.shutdownWrite()
            for _ in 0..<1000 where origin.cutShort == 0 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(origin.cutShort == 1)
            for _ in 0..<3 {
                let next = try TestClient(port: larder.port, timeout: .seconds(20))
                try next.send("POST /up/file HTTP/1.1\r\nHost: larder\r\nContent-Length: \(Self.size)\r\n\r\n")
                try await next.sendOffPool(Self.body)
                let response = try await next.readResponse()
                #expect(response.status == 200 && response.text == "\(Self.size) same")
            }
        }
    }

    /// A 32 MiB upload sent fast to an origin that takes it slowly waits in the spool file,
    /// not in Larder's memory (a separate process, so its RSS is its own).
    @Test func aFastUploadToASlowOriginCostsLarderNoMemoryForTheBody() async throws {
        let size = 32 << 20
        let upload = patternBytes(size)
        let origin = try Origin(expected: upload, slowly: true)
        defer { origin.server.stop() }
        let directory = FaultSuiteTests.freshDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let larder = try LarderProcess(["serve", "--port", "0", "--log-level", "warning", "--route", "/up=\(origin.url)"],
                                       environment: ["LARDER_CACHE_DIR": directory])
        let port = try await larder.waitForPort()
        let baseline = FaultSuiteTests.residentMiB(larder.pid)
        final class Sampling: Sendable { let on = Atomic<Bool>(true) }
        let sampling = Sampling()
        let pid = larder.pid
        let peak = Task.detached {
            var peak = 0
            while sampling.on.load(ordering: .relaxed) {
                peak = max(peak, FaultSuiteTests.residentMiB(pid))
                try? await Task.sleep(for: .milliseconds(20))
            }
            return peak
        }
        let client = try TestClient(port: port, timeout: .seconds(40))
        try client.send("PUT /up/big HTTP/1.1\r\nHost: larder\r\nContent-Length: \(size)\r\n\r\n")
        try await client.sendOffPool(upload)
        let response = try await client.readResponse()
        sampling.on.store(false, ordering: .relaxed)
        let highest = await peak.value
        #expect(response.status == 200 && response.text == "\(size) same")
        #expect(highest - baseline < 16, "RSS \(baseline) MiB before, \(highest) MiB at most while a 32 MiB upload went to a slow origin")
        larder.signal(SIGTERM)
        #expect(await larder.waitForExit() == 0)
    }
}
