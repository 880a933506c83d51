import Foundation
import HTTPCore
import HTTPServer
import Testing
import TestSupport
@testable import Upstream

/// Bodies past what the upstream client holds in memory: spooled to a file whole, or
/// returned at their head as a stream the rest of the transfer fills.
@Suite(.timeLimit(.minutes(1)))
struct UpstreamSpoolTests {
    /// Past what is held in memory, a body with somewhere to spool goes on into an unnamed
    /// file: the answer is that file's region, whole, and nothing is left in the directory.
    @Test func aBodyPastTheHeldLimitIsSpooledToAFile() async throws {
        try await withSpoolDirectory { directory, port, client in
            var request = UpstreamRequest(url: "http://127.0.0.1:\(port)/big", maxBodyBytes: 100_000)
            request.spoolDirectory = directory
            let response = try await client.fetch(request)
            guard case .file(let region) = response.body else {
                Issue.record("the body was held in memory")
                return
            }
            #expect(region.offset == 0 && region.count == 200_000)
            var bytes = [UInt8](repeating: 0, count: 200_001)
            let read = bytes.withUnsafeMutableBytes { pread(region.file.descriptor, $0.baseAddress, 200_001, 0) }
            #expect(read == 200_000 && bytes[..<200_000].allSatisfy { $0 == 0x61 })
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
            // One that fits is held as before.
            request.maxBodyBytes = 200_000
            #expect(try await client.fetch(request).body.inMemory?.count == 200_000)
        }
    }

    /// A 200 large enough to stream comes back at its head, its body a stream that the rest
    /// of the transfer fills, taken a share at a time (paused and resumed) until it is whole.
    @Test func aLargeAnswerComesBackAsAStreamThatFillsToTheEnd() async throws {
        try await withSpoolDirectory { directory, port, client in
            var request = UpstreamRequest(url: "http://127.0.0.1:\(port)/big")
            request.spoolDirectory = directory
            request.streamsFrom = 1000
            let response = try await client.fetch(request)
            guard case .stream(let region) = response.body else {
                Issue.record("the answer was not streamed")
                return
            }
            #expect(region.count == 200_000)
            let whole = await withCheckedContinuation { continuation in region.stream.whenFinished { continuation.resume(returning: $0) } }
            #expect(whole && region.stream.progress == .complete)
            var bytes = [UInt8](repeating: 0, count: 200_000)
            #expect(bytes.withUnsafeMutableBytes { region.stream.file.read(into: $0, at: 0) } == 200_000)
            #expect(bytes.allSatisfy { $0 == 0x61 })
        }
    }

    /// Runs `body` with a new directory to spool into (removed after), an upstream serving
    /// `upstreamRouter()` on `port`, and a client.
    private func withSpoolDirectory(_ body: (String, Int, UpstreamClient) async throws -> Void) async throws {
        let directory = NSTemporaryDirectory() + "larder-spool-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await withServer(handler: upstreamRouter()) { _, port in
            try await withClient { client in try await body(directory, port, client) }
        }
    }
}
