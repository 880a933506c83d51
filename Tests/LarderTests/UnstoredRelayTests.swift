#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPCore
import Bodies
import Synchronization
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// Streamed answers too large to store, which only their clients read: when the last of
/// them leaves, the transfer stops; and a `Range` of one is asked of the origin rather than
/// waited for. The origin sends at most 64 MiB a second, so a whole answer would take far
/// longer than these tests wait.
@Suite(.timeLimit(.minutes(1)))
struct UnstoredRelayTests {
    /// An origin answering `length` bytes slowly until its client goes (`cut`), and a `Range`
    /// request with a 206 of ten bytes at once.
    final class Origin: Sendable {
        final class Flags: Sendable {
            let sent = Atomic<Int>(0)
            let cut = Atomic<Bool>(false)
            let ranges = Atomic<Int>(0)
        }
        let flags = Flags()
        let server: RawServer
        var url: String { "http://127.0.0.1:\(server.port)" }
        var sent: Int { flags.sent.load(ordering: .relaxed) }
        var ranges: Int { flags.ranges.load(ordering: .relaxed) }

        init(length: Int) throws {
            let flags = self.flags
            server = try RawServer { fd, _ in
                let head = RawServer.readHead(fd).lowercased()
                if head.contains("\r\nrange: bytes=100-109\r\n") {
                    flags.ranges.add(1, ordering: .relaxed)
                    return RawServer.send(fd, "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 100-109/\(length)\r\nContent-Length: 10\r\n\r\n0123456789")
                }
                RawServer.send(fd, "HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\nContent-Length: \(length)\r\n\r\n")
                let piece = [UInt8](repeating: 0x61, count: 64 << 10)
                while flags.sent.load(ordering: .relaxed) < length {
                    let n = piece.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    guard n > 0 else { return flags.cut.store(true, ordering: .relaxed) }
                    flags.sent.add(n, ordering: .relaxed)
                    usleep(1000)
                }
            }
        }

        /// Whether the origin saw its connection closed within `seconds`.
        func waitForCut(seconds: Int = 10) async throws -> Bool {
            for _ in 0..<(seconds * 20) where !flags.cut.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(50)) }
            return flags.cut.load(ordering: .relaxed)
        }
    }

    @Test func aClientLeavingAnAnswerNotStoredStopsItsTransfer() async throws {
        let length = HeldAnswer.largestSpooled + (1 << 20)
        let origin = try Origin(length: length)
        defer { origin.server.stop() }
        try await withLarder({ StreamingTests.route(origin.url, into: &$0) }) { larder in
            do {
                let client = try TestClient(port: larder.port)
                try client.send("GET /s/huge HTTP/1.1\r\nHost: larder\r\n\r\n")
                let early = try await StreamingTests.read(client, bodyBytes: 64 << 10)
                #expect(String(decoding: early.prefix(15), as: UTF8.self) == "HTTP/1.1 200 OK")
            }  // the client leaves
            #expect(try await origin.waitForCut())
            let sent = origin.sent
            #expect(sent < length / 2)
        }
    }

    @Test func aRangeOfAnAnswerNotStoredIsAnsweredByTheOrigin() async throws {
        let origin = try Origin(length: 64 << 20)
        defer { origin.server.stop() }
        try await withLarder({ settings in
            StreamingTests.route(origin.url, into: &settings)
            settings.routes[0].caching.maxObjectSize = 16 << 20
        }) { larder in
            let ranged = try await larder.get("/s/big", headers: ["Range: bytes=100-109"])
            #expect(ranged.status == 206 && ranged.body == Array("0123456789".utf8))
            #expect(ranged.header("Content-Range") == "bytes 100-109/\(64 << 20)")
            let ranges = origin.ranges
            #expect(ranges == 1)
            // The whole answer fetched first, read by nobody once the range went to the origin, stops.
            #expect(try await origin.waitForCut())
        }
    }
}
