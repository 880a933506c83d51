#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPCore
import Bodies
import HTTPServer
import Synchronization
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// Large misses relayed as the origin sends them: a real Larder in this process in front of
/// an origin that sends a head and the first part of a body, then holds the rest back until
/// the test has seen that first part arrive (or 10 s pass).
@Suite(.timeLimit(.minutes(1)))
struct StreamingTests {
    static let size = 4 << 20
    static let first = 64 << 10
    static let body = patternBytes(size)

    /// The held-back origin: it sends `first` bytes of `body`, then `released` lets it send the
    /// rest; `dropsMidBody` resets instead. `chunked`: no length stated, the body in 64 KiB chunks.
    final class Origin: Sendable {
        final class Flags: Sendable {
            let released = Atomic<Bool>(false)
            let heads = Atomic<Int>(0)
        }
        let flags = Flags()
        let server: RawServer
        var released: Bool { flags.released.load(ordering: .relaxed) }
        var heads: Int { flags.heads.load(ordering: .relaxed) }
        func release(_ released: Bool = true) { flags.released.store(released, ordering: .relaxed) }

        /// `declaredLength`: the `Content-Length` it states (with `dropsMidBody`, any).
        init(dropsMidBody: Bool = false, declaredLength: Int = StreamingTests.size, chunked: Bool = false,
             first: Int = StreamingTests.first) throws {
            let flags = self.flags
            let framing = chunked ? "Transfer-Encoding: chunked" : "Content-Length: \(declaredLength)"
            let send: @Sendable (Int32, ArraySlice<UInt8>) -> Void = chunked ? Self.sendChunks : Self.send
            server = try RawServer { fd, _ in
                RawServer.readHead(fd)
                flags.heads.add(1, ordering: .relaxed)
                RawServer.send(fd, "HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\n\(framing)\r\n\r\n")
                send(fd, StreamingTests.body[..<first])
                for _ in 0..<1000 where !flags.released.load(ordering: .relaxed) { usleep(10_000) }
                if dropsMidBody { return RawServer.reset(fd) }
                send(fd, StreamingTests.body[first...])
                if chunked { RawServer.send(fd, "0\r\n\r\n") }
            }
        }

        /// `bytes` as 64 KiB chunks.
        static func sendChunks(_ fd: Int32, _ bytes: ArraySlice<UInt8>) {
            var start = bytes.startIndex
            while start < bytes.endIndex {
                let end = min(start + (64 << 10), bytes.endIndex)
                RawServer.send(fd, String(end - start, radix: 16) + "\r\n")
                send(fd, bytes[start..<end])
                RawServer.send(fd, "\r\n")
                start = end
            }
        }

        static func send(_ fd: Int32, _ bytes: ArraySlice<UInt8>) {
            var sent = bytes.startIndex
            while sent < bytes.endIndex {
                let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard n > 0 else { return }
                sent += n
            }
        }

        var url: String { "http://127.0.0.1:\(server.port)" }
    }

    /// Larder's route to the origin, with room for a loaded machine between the origin's
    /// first part and the rest (a stall as long as the timeout fails the transfer).
    static func route(_ url: String, into settings: inout ServeSettings) {
        var route = RouteMount("/s=\(url)")!
        route.caching.timeout = .seconds(30)
        settings.routes = [route]
    }

    /// The body bytes among what a client has read so far (after the head).
    static func bodyBytes(_ raw: [UInt8]) -> ArraySlice<UInt8> {
        guard let end = TestClient.find([13, 10, 13, 10], in: raw) else { return [] }
        return raw[(end + 4)...]
    }

    /// What the client has read once `count` body bytes are in (or it can read no more).
    static func read(_ client: TestClient, bodyBytes count: Int) async throws -> [UInt8] {
        var raw = try await client.peek(atLeast: count)
        while bodyBytes(raw).count < count {
            let more = try await client.peek(atLeast: raw.count + 1)
            guard more.count > raw.count else { break }
            raw = more
        }
        return raw
    }

    @Test func aLargeMissReachesTheClientAsTheOriginSendsItAndIsStoredOnceWhole() async throws {
        let origin = try Origin()
        defer { origin.server.stop() }
        try await withLarder({ Self.route(origin.url, into: &$0) }) { larder in
            let client = try TestClient(port: larder.port)
            try client.send("GET /s/big HTTP/1.1\r\nHost: larder\r\n\r\n")
            // The head and the first part arrive while the origin still holds the rest back.
            let early = try await Self.read(client, bodyBytes: Self.first)
            let heldBack = !origin.released
            #expect(heldBack)
            #expect(Self.bodyBytes(early).count >= Self.first && sameBytes(Self.bodyBytes(early).prefix(Self.first), Self.body[..<Self.first]))
            origin.release()
            let response = try await client.readResponse()
            #expect(response.status == 200 && sameBytes(response.body, Self.body))
            #expect(response.header("Content-Length") == "\(Self.size)")
            // Sent before it was whole, the answer cannot say it was stored.
            #expect(response.header("Cache-Status") == "larder; fwd=miss; fwd-status=200")
            // Once whole it is stored: a later request is a hit, and the origin was asked once.
            var hit: TestResponse?
            for _ in 0..<50 where hit == nil {
                let again = try await larder.get("/s/big")
                if again.header("Cache-Status")?.hasPrefix("larder; hit") == true { hit = again } else { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(sameBytes(hit?.body ?? [], Self.body))
            let heads = origin.heads
            #expect(heads == 1)
        }
    }

    /// Requests collapsed onto one large miss each read it along from the start.
    @Test func collapsedRequestsEachGetTheWholeBodyFromOneFetch() async throws {
        let origin = try Origin()
        defer { origin.server.stop() }
        try await withLarder({ Self.route(origin.url, into: &$0) }) { larder in
            let clients = try (0..<3).map { _ in try TestClient(port: larder.port) }
            for client in clients { try client.send("GET /s/big HTTP/1.1\r\nHost: larder\r\n\r\n") }
            for client in clients {
                let early = try await Self.read(client, bodyBytes: Self.first)
                #expect(Self.bodyBytes(early).count >= Self.first)
            }
            let heldBack = !origin.released
            #expect(heldBack)
            origin.release()
            for client in clients {
                let response = try await client.readResponse()
                #expect(response.status == 200 && sameBytes(response.body, Self.body))
            }
            let heads = origin.heads
            #expect(heads == 1)
        }
    }

    /// The origin drops its connection after the head went out: the client's connection is
    /// closed short of the promised length (the only way left to say so), and nothing is
    /// stored: the next request reaches the origin again.
    @Test func anOriginDroppingMidStreamClosesTheClientAndStoresNothing() async throws {
        let origin = try Origin(dropsMidBody: true)
        defer { origin.server.stop() }
        try await withLarder({ Self.route(origin.url, into: &$0) }) { larder in
            let client = try TestClient(port: larder.port)
            try client.send("GET /s/big HTTP/1.1\r\nHost: larder\r\n\r\n")
            _ = try await Self.read(client, bodyBytes: Self.first)
            origin.release()
            #expect(await client.waitForClose(within: .seconds(10)))
            let received = try await client.peek(atLeast: Int.max)
            #expect(Self.bodyBytes(received).count < Self.size)
            origin.release(false)
            let next = try TestClient(port: larder.port)
            try next.send("GET /s/big HTTP/1.1\r\nHost: larder\r\n\r\n")
            _ = try await Self.read(next, bodyBytes: 1)
            let heads = origin.heads
            #expect(heads == 2)
            origin.release()
        }
    }

    /// An answer larger than any Larder stores (over 1 GiB) is relayed all the same, as it
    /// arrives, and says it is not stored; it was a 502 once (only taking it whole was
    /// possible). The origin stops after its first part, so the client is closed short.
    @Test func anAnswerOverTheLargestStoredIsRelayedAsItArrives() async throws {
        let length = HeldAnswer.largestSpooled + (1 << 20)
        let origin = try Origin(dropsMidBody: true, declaredLength: length)
        defer { origin.server.stop() }
        try await withLarder({ Self.route(origin.url, into: &$0) }) { larder in
            let client = try TestClient(port: larder.port)
            try client.send("GET /s/huge HTTP/1.1\r\nHost: larder\r\n\r\n")
            let early = try await Self.read(client, bodyBytes: Self.first)
            let head = String(decoding: early.prefix((TestClient.find([13, 10, 13, 10], in: early) ?? 0) + 2), as: UTF8.self)
            #expect(head.hasPrefix("HTTP/1.1 200 "))
            #expect(head.contains("Content-Length: \(length)\r\n"))
            #expect(head.contains("detail=too-large"))
            #expect(sameBytes(Self.bodyBytes(early).prefix(Self.first), Self.body[..<Self.first]))
            origin.release()
            #expect(await client.waitForClose(within: .seconds(10)))
        }
    }

    /// A client that reads slowly while the origin is fast: the answer waits in the spool
    /// file, not in Larder's memory, and the connection is woken as the stream moves on, not
    /// once more for every time its client read (which once piled up wakes without bound).
    @Test func aSlowReaderCostsLarderNoMemoryForTheBody() async throws {
        let size = 48 << 20
        let body = patternBytes(size)
        let origin = try TestOrigin { _ in HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=600")]), body: body) }
        let directory = FaultSuiteTests.freshDirectory()
        let (larder, port) = try await FaultSuiteTests.larder(origin, cacheDirectory: directory)
        let baseline = FaultSuiteTests.residentMiB(larder.pid)
        let client = try TestClient(port: port)
        try client.send("GET /b/slow HTTP/1.1\r\nHost: larder\r\n\r\n")
        let fd = client.fd, pid = larder.pid
        let (received, peak) = await withCheckedContinuation { continuation in
            Thread {
                var chunk = [UInt8](repeating: 0, count: 64 << 10)
                var received = 0, reads = 0, peak = 0, head: Int?
                var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                while received < size + (head ?? 1), poll(&pfd, 1, 10_000) > 0 {
                    let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                    guard n > 0 else { break }
                    // The head arrives whole in the first read (it is sent before any body byte).
                    if head == nil { head = TestClient.find([13, 10, 13, 10], in: Array(chunk[..<n])).map { $0 + 4 } }
                    received += n
                    reads += 1
                    if reads % 16 == 0 { peak = max(peak, FaultSuiteTests.residentMiB(pid)) }
                    usleep(2_000)
                }
                continuation.resume(returning: (received - (head ?? 0), peak))
            }.start()
        }
        #expect(received == size, "\(received) body bytes")
        #expect(peak - baseline < 32, "RSS \(baseline) MiB before, \(peak) MiB at most while a 48 MiB answer was read slowly")
        larder.signal(SIGTERM)
        #expect(await larder.waitForExit() == 0)
        await origin.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
