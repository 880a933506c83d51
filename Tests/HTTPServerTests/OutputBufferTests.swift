import Foundation
import HTTPCore
import Bodies
@testable import HTTPServer
import Testing

extension OutputPiece {
    /// The piece's bytes: a file region read from its file, as `sendfile` would send it.
    var contents: [UInt8] {
        switch self {
        case .bytes(let bytes): return Array(bytes)
        case .file(let descriptor, let offset, let count):
            var read = [UInt8](repeating: 0, count: count)
            let n = read.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, off_t(offset)) }
            return Array(read[..<max(0, n)])
        case .waiting, .failed:
            return []
        }
    }
}

/// The raw buffer a connection's responses are written into and sent from.
@Suite struct OutputBufferTests {
    private func unsent(_ buffer: borrowing OutputBuffer) -> [UInt8] {
        var all: [UInt8] = []
        buffer.forEachPiece { all += $0 }
        return all
    }

    /// What a sender sends: the next piece, as much of it as `room` allows, until none is left.
    private func sendAll(_ buffer: inout OutputBuffer, room: Int) -> (bytes: [UInt8], sends: [(count: Int, more: Bool)]) {
        var bytes: [UInt8] = []
        var sends: [(Int, Bool)] = []
        while buffer.pending > 0 {
            let (n, more) = buffer.withNextPiece { piece, more in
                let contents = piece.contents
                bytes += contents.prefix(room)
                return (min(room, contents.count), more || contents.count > room)
            }
            sends.append((n, more))
            buffer.markSent(n)
        }
        return (bytes, sends)
    }

    @Test func piecesComeOutInOrderAcrossGrowthAndPartialSends() {
        var buffer = OutputBuffer()
        #expect(unsent(buffer).isEmpty && buffer.pending == 0)
        var expected: [UInt8] = []
        // Enough pieces of every kind to grow the storage several times from its first 512 bytes.
        for i in 0..<300 {
            buffer.bytes.append("HTTP/1.1 ")
            buffer.bytes.append(decimal: i - 150)
            buffer.bytes.append([0x0D, 0x0A])
            [UInt8]("x".utf8).withUnsafeBytes { buffer.bytes.append($0) }
            buffer.bytes.append(UnsafeRawBufferPointer(start: nil, count: 0))
            expected += Array("HTTP/1.1 \(i - 150)\r\nx".utf8)
        }
        #expect(unsent(buffer) == expected)
        #expect(buffer.bytes.capacity >= expected.count)
        buffer.markSent(7)
        #expect(unsent(buffer) == Array(expected.dropFirst(7)) && buffer.pending == expected.count - 7)
        buffer.bytes.append("tail")
        buffer.markSent(expected.count - 7)
        #expect(unsent(buffer) == Array("tail".utf8))
        // Once everything is sent, writing starts again at the front, in the same storage.
        let capacity = buffer.bytes.capacity
        buffer.markSent(4)
        #expect(buffer.pending == 0 && buffer.bytes.count == 0 && buffer.bytes.capacity == capacity)
        buffer.bytes.append("next")
        #expect(unsent(buffer) == Array("next".utf8))
    }

    /// Shared bodies leave between the rendered bytes around them, never copied; a piece is
    /// marked as followed by more until the last, so a head and its body share packets.
    @Test(arguments: [1, 3, 7, 64, 100_000])
    func sharedBodiesLeaveInPlaceWhateverEachSendTakes(_ room: Int) throws {
        var buffer = OutputBuffer()
        let first = [UInt8](repeating: 0x61, count: 40), second = [UInt8](repeating: 0x62, count: 30)
        let third = [UInt8](repeating: 0x63, count: 50)
        let file = try #require(BodyFile.spool(in: NSTemporaryDirectory()))
        #expect(third.withUnsafeBytes { file.write($0, at: 0) })
        let region = Body.file(FileRegion(file: file, offset: 10, count: 40))
        buffer.bytes.append("head1\r\n")
        buffer.share(.bytes(first), 5..<40)
        buffer.bytes.append("head2\r\n")
        buffer.share(.bytes(second), second.indices)
        buffer.share(.bytes(first), 0..<2)  // two shared pieces in a row
        buffer.share(.bytes(second), 3..<3)  // an empty one is nothing
        buffer.share(region, 5..<40)  // a file region, sent from the file
        buffer.bytes.append("tail")
        var expected: [UInt8] = Array("head1\r\n".utf8) + first[5...]
        expected += Array("head2\r\n".utf8) + second + first[0..<2]
        expected += third[15..<50] + Array("tail".utf8)
        #expect(buffer.pending == expected.count && unsent(buffer) == expected)
        let (bytes, sends) = sendAll(&buffer, room: room)
        #expect(bytes == expected)
        #expect(sends.dropLast().allSatisfy(\.more) && sends.last?.more == false)
        #expect(buffer.pending == 0 && buffer.bytes.count == 0)
        buffer.bytes.append("again")
        #expect(unsent(buffer) == Array("again".utf8))
    }

    /// A slow reader while answers keep coming: what was sent is dropped from the front, so
    /// the storage holds about what waits, not everything written since the last catch-up.
    @Test func sentBytesAreDroppedWhileMoreWait() {
        var buffer = OutputBuffer()
        let answer = [UInt8](repeating: 0x64, count: 1000)
        let shared = [UInt8](repeating: 0x65, count: OutputBuffer.sharedBodyMinimum)
        var expected: [UInt8] = []
        var received: [UInt8] = []
        for round in 0..<2000 {
            buffer.bytes.append(answer)
            expected += answer
            if round % 100 == 0 {
                buffer.share(.bytes(shared), shared.indices)
                expected += shared
            }
            // The reader takes a little less than is written.
            let (n, _) = buffer.withNextPiece { piece, more in
                let contents = piece.contents
                received += contents.prefix(900)
                return (min(900, contents.count), more)
            }
            buffer.markSent(n)
        }
        #expect(buffer.bytes.capacity < 4 * (buffer.pending + OutputBuffer.compactionThreshold), "\(buffer.bytes.capacity)")
        var rest: [UInt8] = []
        buffer.forEachPiece { rest += $0 }
        #expect(received + rest == expected)
    }

    /// A head says more follows (`MSG_MORE`) before a body in memory or a file, not before
    /// a body still arriving: the kernel would hold it until the first body bytes came.
    @Test func aHeadDoesNotWaitInTheKernelForABodyStillArriving() throws {
        let directory = NSTemporaryDirectory()
        let stream = BodyStream(file: try #require(BodyFile.spool(in: directory)), length: 10)
        for (body, holds) in [(Body.bytes([UInt8](repeating: 0x61, count: OutputBuffer.sharedBodyMinimum)), true),
                              (.stream(StreamRegion(stream: stream, count: 10)), false)] {
            var buffer = OutputBuffer()
            buffer.bytes.append("head")
            buffer.share(body, 0..<body.count)
            let more = buffer.withNextPiece { _, more in more }
            #expect(more == holds)
        }
    }

    /// An open-ended body (no length known) goes out as chunks of what has arrived whenever
    /// it is looked at, each chunk's size fixed once its size line is offered however little
    /// each send takes, then the last chunk; to HTTP/1.0 it goes as it is (the close ends it).
    @Test(arguments: [(true, 1), (true, 4), (true, 100_000), (false, 3), (false, 100_000)])
    func anOpenEndedBodyIsSentAsChunksOfWhatHasArrived(chunked: Bool, room: Int) throws {
        let file = try #require(BodyFile.spool(in: NSTemporaryDirectory()))
        let stream = BodyStream(file: file, length: StreamRegion.toTheEnd, openEnded: true)
        var buffer = OutputBuffer()
        buffer.bytes.append("head\r\n\r\n")
        buffer.shareToTheEnd(StreamRegion(stream: stream, count: StreamRegion.toTheEnd), chunked: chunked)
        buffer.bytes.append("next")
        var sent = drainUntilWaiting(&buffer, room: room)
        #expect(sent == Array("head\r\n\r\n".utf8) && buffer.pending > 0)
        for part in ["hello", " world, at more length"] {
            #expect(Array(part.utf8).withUnsafeBytes { stream.append($0) })
            sent += drainUntilWaiting(&buffer, room: room)
        }
        stream.finish(succeeded: true)
        sent += drainUntilWaiting(&buffer, room: room)
        let expected = chunked ? "head\r\n\r\n5\r\nhello\r\n16\r\n world, at more length\r\n0\r\n\r\nnext" : "head\r\n\r\nhello world, at more lengthnext"
        #expect(String(decoding: sent, as: UTF8.self) == expected)
        #expect(buffer.pending == 0)
    }

    /// Sends pieces, at most `room` bytes each, until everything is sent or a body waits.
    private func drainUntilWaiting(_ buffer: inout OutputBuffer, room: Int) -> [UInt8] {
        var sent: [UInt8] = []
        while buffer.pending > 0 {
            var waiting = false
            let n = buffer.withNextPiece { piece, _ in
                if case .waiting = piece { waiting = true }
                let contents = piece.contents.prefix(room)
                sent += contents
                return contents.count
            }
            if waiting { break }
            buffer.markSent(n)
        }
        return sent
    }

    @Test func aSharedBodyAtTheEndIsSentLast() {
        var buffer = OutputBuffer()
        let body = [UInt8](repeating: 0x63, count: 10)
        buffer.bytes.append("h")
        buffer.share(.bytes(body), body.indices)
        let (bytes, sends) = sendAll(&buffer, room: 4)
        #expect(bytes == Array("h".utf8) + body && sends.map(\.count) == [1, 4, 4, 2])
        #expect(buffer.pending == 0)
    }

    @Test func storageBeyondTheKeptSizeIsGivenBackOnceSent() {
        var buffer = OutputBuffer()
        let body = [UInt8](repeating: 0x61, count: OutputBuffer.keptCapacity + 1)
        buffer.bytes.reserve(16)
        buffer.bytes.append(body)
        #expect(buffer.bytes.capacity > OutputBuffer.keptCapacity)
        buffer.markSent(body.count - 1)
        #expect(buffer.pending == 1 && buffer.bytes.capacity > OutputBuffer.keptCapacity)
        buffer.markSent(1)
        #expect(buffer.bytes.capacity == 0 && buffer.pending == 0)
        buffer.bytes.append("again")
        #expect(unsent(buffer) == Array("again".utf8))
    }
}
