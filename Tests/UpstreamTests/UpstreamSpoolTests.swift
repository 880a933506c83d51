import Foundation
import HTTPCore
import Bodies
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
            // After the room left for a disk entry's head, running to the end of the file.
            #expect(region.offset == HeldAnswer.spoolHeadRoom && region.count == 200_000)
            var bytes = [UInt8](repeating: 0, count: 200_001)
            let read = bytes.withUnsafeMutableBytes { pread(region.file.descriptor, $0.baseAddress, 200_001, off_t(region.offset)) }
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
            #expect(region.offset == HeldAnswer.spoolHeadRoom && region.stream.written == region.offset + 200_000)
            #expect(bytes.withUnsafeMutableBytes { region.stream.file.read(into: $0, at: region.offset) } == 200_000)
            #expect(bytes.allSatisfy { $0 == 0x61 })
        }
    }

    /// A transfer that may stream takes any length it streams, so curl's own length check is
    /// off for it; an answer that will not stream (not a 200) and states more than can be
    /// taken whole still fails at its head, not after a gigabyte.
    @Test func anAnswerThatCannotStreamAndIsTooLargeFailsAtItsHead() async throws {
        let origin = try RawServer { fd, _ in
            RawServer.readHead(fd)
            RawServer.send(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: \(HeldAnswer.largestSpooled + 1)\r\n\r\nnot here")
            usleep(200_000)
        }
        defer { origin.stop() }
        try await withSpoolDirectory { directory, _, client in
            var request = UpstreamRequest(url: "http://127.0.0.1:\(origin.port)/missing")
            request.spoolDirectory = directory
            request.streamsFrom = 1000
            await #expect(throws: UpstreamError.bodyTooLarge(limit: HeldAnswer.largestSpooled)) { try await client.fetch(request) }
        }
    }

    /// A request body in a file is sent from it; one still arriving as a stream is sent as
    /// far as it is written, the transfer pausing until more comes, and reaches the origin whole.
    @Test func aRequestBodyIsSentFromItsFileOrAsItArrives() async throws {
        try await withSpoolDirectory { directory, port, client in
            let body = patternBytes(300_000)
            let file = try #require(BodyFile.spool(in: directory))
            #expect(body.withUnsafeBytes { file.write($0, at: 0) })
            let fromFile = try await client.fetch(UpstreamRequest(url: "http://127.0.0.1:\(port)/echo", method: .post,
                                                                   body: .file(FileRegion(file: file, offset: 0, count: body.count))))
            #expect(fromFile.status == 200 && sameBytes(fromFile.body.inMemory ?? [], body))

            let stream = BodyStream(file: try #require(BodyFile.spool(in: directory)), length: body.count)
            // The first part now, the rest from another thread a while after the transfer began.
            #expect(body[..<100_000].withUnsafeBytes { stream.append($0) })
            let writer = Thread {
                usleep(200_000)
                for start in stride(from: 100_000, to: body.count, by: 50_000) {
                    _ = body[start..<min(start + 50_000, body.count)].withUnsafeBytes { stream.append($0) }
                    usleep(20_000)
                }
                stream.finish(succeeded: true)
            }
            writer.start()
            let streamed = try await client.fetch(UpstreamRequest(url: "http://127.0.0.1:\(port)/echo", method: .post,
                                                                   body: .stream(StreamRegion(stream: stream, count: body.count))))
            #expect(streamed.status == 200 && sameBytes(streamed.body.inMemory ?? [], body))
        }
    }

    /// A streamed request body that ends short stops the transfer: Larder's side, not the upstream's.
    @Test func aRequestBodyThatEndsShortFailsTheTransfer() async throws {
        try await withSpoolDirectory { directory, port, client in
            let stream = BodyStream(file: try #require(BodyFile.spool(in: directory)), length: 100_000)
            #expect([UInt8](repeating: 1, count: 10_000).withUnsafeBytes { stream.append($0) })
            let ender = Thread {
                usleep(200_000)
                stream.finish(succeeded: false)
            }
            ender.start()
            await #expect {
                try await client.fetch(UpstreamRequest(url: "http://127.0.0.1:\(port)/echo", method: .post,
                                                       body: .stream(StreamRegion(stream: stream, count: 100_000))))
            } throws: { error in
                if case .requestBodyIncomplete = error as? UpstreamError { return true }
                return false
            }
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
