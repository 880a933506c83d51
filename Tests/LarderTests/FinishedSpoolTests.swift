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
@testable import Caching
@testable import Larder
@testable import Settings

/// A large answer (past what a memory hit holds, so kept in a file) is stored by the time its
/// client has it all: a request arriving right after finds it, whether the disk tier has
/// named its file yet or not. One the origin cut short is never found.
@Suite(.timeLimit(.minutes(2)))
struct FinishedSpoolTests {
    static let size = 50 << 20
    static let body = patternBytes(size)

    @Test func theRequestRightAfterALargeAnswerEndedIsAHit() async throws {
        let origin = try TestOrigin { _ in
            HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=600")]), body: Self.body)
        }
        try await withLarder({ SpoolBudgetTests.route(origin.url, into: &$0) }) { larder in
            // A disk slower than the client (a 400 MiB answer's copy took 0.88 s): the writer
            // is held until the second request has been answered.
            let held = DispatchSemaphore(value: 0)
            let disk = try #require(larder.service.routes.now?.base.disk)
            disk.writes.add(start: true) { _ = held.wait(timeout: .now() + 30) }
            let first = try await larder.get("/b/big")
            #expect(first.status == 200 && sameBytes(first.body, Self.body))
            let second = try await larder.get("/b/big")
            held.signal()
            #expect(second.header("Cache-Status")?.hasPrefix("larder; hit") == true, "\(second.header("Cache-Status") ?? "")")
            #expect(second.status == 200 && sameBytes(second.body, Self.body))
            let asked = origin.requests.count
            #expect(asked == 1)
            // And once the disk has it, from there: the spool file itself, named, not a copy
            // (the unused part of the room left for the head is a hole; a copy has none).
            await larder.service.waitForDiskWrites()
            let files = FaultSuiteTests.entryFiles(larder.cacheDirectory)
            var info = stat()
            #expect(files.count == 1 && stat(files[0], &info) == 0)
            #expect(Int(info.st_size) == HeldAnswer.spoolHeadRoom + Self.size)
            #expect(Int(info.st_blocks) * 512 < Int(info.st_size), "\(info.st_blocks) blocks of \(info.st_size) bytes")
            let third = try await larder.get("/b/big")
            #expect(third.header("Cache-Status")?.hasPrefix("larder; hit") == true && sameBytes(third.body, Self.body))
            #expect(origin.requests.count == 1)
        }
        await origin.stop()
    }

    /// The origin states 50 MiB, sends 20 and closes: the client is cut short, nothing is
    /// stored, and the next request goes to the origin again.
    @Test func anAnswerTheOriginCutShortIsNeverFound() async throws {
        let heads = Atomic<Int>(0)
        let server = try RawServer { fd, _ in
            RawServer.readHead(fd)
            heads.add(1, ordering: .relaxed)
            RawServer.send(fd, "HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\nContent-Length: \(Self.size)\r\n\r\n")
            StreamingTests.Origin.send(fd, Self.body[..<(20 << 20)])
        }
        defer { server.stop() }
        try await withLarder({ SpoolBudgetTests.route("http://127.0.0.1:\(server.port)", into: &$0) }) { larder in
            let client = try TestClient(port: larder.port)
            try client.send("GET /b/lie HTTP/1.1\r\nHost: larder\r\n\r\n")
            #expect(await client.waitForClose(within: .seconds(30)))
            let received = try await client.peek(atLeast: Int.max)
            #expect(StreamingTests.bodyBytes(received).count < Self.size)
            await larder.service.waitForDiskWrites()
            let next = try TestClient(port: larder.port)
            try next.send("GET /b/lie HTTP/1.1\r\nHost: larder\r\n\r\n")
            let early = try await StreamingTests.read(next, bodyBytes: 1)
            #expect(String(decoding: early.prefix(400), as: UTF8.self).contains("fwd=miss"))
            #expect(heads.load(ordering: .relaxed) == 2)
            #expect(FaultSuiteTests.entryFiles(larder.cacheDirectory).isEmpty)
        }
    }
}
