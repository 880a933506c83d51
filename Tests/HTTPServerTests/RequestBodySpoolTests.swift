import Foundation
import HTTPCore
import Bodies
import Testing
import TestSupport
@testable import HTTPServer

/// Request bodies past what is held in memory, with a spool directory: one of known length
/// is dispatched at the end of its head and streams into a file; a chunked one goes into a
/// file first and is dispatched whole.
@Suite struct RequestBodySpoolTests {
    static let held = 8

    /// A body of 20 bytes, over the 8 held: the request comes at its head, its body a stream
    /// that fills as bytes are parsed; the next request follows once the body has ended.
    @Test func aBodyOfKnownLengthStreamsAfterItsRequest() throws {
        try withParser { parser in
            var buffer = InputBuffer()
            buffer.append(Array("PUT /u HTTP/1.1\r\nHost: a\r\nContent-Length: 20\r\n\r\n0123456789".utf8))
            guard case .request(let request) = parser.next(&buffer), case .stream(let region) = request.body else {
                Issue.record("not dispatched at its head with a stream")
                return
            }
            #expect(region.count == 20 && parser.streamingBody && parser.readingBody)
            #expect(parser.next(&buffer) == .needMore && region.stream.progress == .written(10))
            buffer.append(Array("abcdefghijGET /next HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
            #expect(parser.next(&buffer) == .bodyEnded)
            #expect(region.stream.progress == .complete && !parser.streamingBody)
            #expect(Self.contents(region.stream.file, 20) == Array("0123456789abcdefghij".utf8))
            guard case .request(let next) = parser.next(&buffer) else {
                Issue.record("the next request was not parsed")
                return
            }
            #expect(next.path == "/next" && next.body.isEmpty)
        }
    }

    /// A connection that fails or closes mid-body ends the stream short.
    @Test func anAbandonedBodyEndsItsStreamShort() throws {
        try withParser { parser in
            var buffer = InputBuffer()
            buffer.append(Array("POST /u HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\nabc".utf8))
            guard case .request(let request) = parser.next(&buffer), case .stream(let region) = request.body else {
                Issue.record("not streamed")
                return
            }
            _ = parser.next(&buffer)
            parser.abandonBody()
            #expect(region.stream.progress == .failed && !parser.streamingBody && !parser.inProgress)
        }
    }

    /// A chunked body is read whole before its request goes on, so the request carries its
    /// length: one within what is held stays in memory; a larger one moves to a spool file,
    /// and the request comes with that file after the last chunk (trailers dropped).
    @Test func aChunkedBodyIsReadWholeBeforeItsRequestGoesOn() throws {
        try withParser { parser in
            var buffer = InputBuffer()
            buffer.append(Array("POST /u HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n".utf8))
            guard case .request(let small) = parser.next(&buffer) else {
                Issue.record("no request")
                return
            }
            #expect(small.body == .bytes(Array("abc".utf8)))
            buffer.append(Array("POST /u HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n".utf8))
            #expect(parser.next(&buffer) == .needMore && !parser.streamingBody && !parser.bodyInFile)
            buffer.append(Array("6;x=1\r\n world\r\n".utf8))
            #expect(parser.next(&buffer) == .needMore && parser.bodyInFile && parser.readingBody)
            buffer.append(Array("0\r\nX-Trailer: t\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
            guard case .request(let large) = parser.next(&buffer), case .file(let region) = large.body else {
                Issue.record("not dispatched whole with a file")
                return
            }
            #expect(region.count == 11 && Self.contents(region.file, 11) == Array("hello world".utf8))
            #expect(large.headers["x-trailer"] == nil && !parser.bodyInFile)
            guard case .request(let next) = parser.next(&buffer) else {
                Issue.record("the next request was not parsed")
                return
            }
            #expect(next.path == "/next" && next.body.isEmpty)
        }
    }

    /// Spool files take their room as they are written, in whole steps: a head that declares
    /// a length takes none. A body longer than all the room is refused at its head (413); one
    /// that finds the room taken, when it does (503, saying why), taking nothing. The room
    /// comes back when a file is let go.
    @Test func aSpoolFileTakesItsRoomAsItIsWrittenAndABodyWithoutRoomIsRefused() async throws {
        let directory = NSTemporaryDirectory() + "larder-request-room-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let step = SpoolRoom.step
        let room = SpoolRoom(limit: 2 * step)
        func parser() -> RequestParser {
            RequestParser(limits: RequestParser.Limits(maxRequestLineBytes: 8192, maxHeaderBytes: 16384, maxHeaderCount: 100,
                                                       maxBodyBytes: 4 << 20, spoolDirectory: directory, spoolRoom: room,
                                                       heldBodyBytes: Self.held))
        }
        var tooLong = parser(), buffer = InputBuffer()
        buffer.append(Array("PUT /u HTTP/1.1\r\nHost: a\r\nContent-Length: \(2 * step + 1)\r\n\r\n".utf8))
        #expect(tooLong.next(&buffer) == .failure(.bodyOverDiskLimit))
        #expect(room.taken == 0)

        var kept: [HTTPRequest] = []
        var first = parser()
        buffer = InputBuffer()
        buffer.append(Array("PUT /u HTTP/1.1\r\nHost: a\r\nContent-Length: \(2 * step)\r\n\r\n".utf8))
        if case .request(let request) = first.next(&buffer) { kept.append(request) }
        #expect(kept.count == 1, "the first upload was dispatched at its head")
        #expect(room.taken == 0, "a head takes no room")
        buffer.append([UInt8](repeating: 1, count: step + 1))
        #expect(first.next(&buffer) == .needMore)
        #expect(room.taken == 2 * step, "what was written, in whole steps")

        var second = parser()
        buffer = InputBuffer()
        buffer.append(Array("PUT /u HTTP/1.1\r\nHost: a\r\nContent-Length: 20\r\n\r\n0123456789".utf8))
        guard case .request = second.next(&buffer) else {
            Issue.record("the second upload was not dispatched at its head")
            return
        }
        #expect(second.next(&buffer) == .failure(.bodyOverDiskBudget))
        var chunked = parser()
        buffer = InputBuffer()
        buffer.append(Array("POST /u HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n".utf8))
        #expect(chunked.next(&buffer) == .failure(.bodyOverDiskBudget), "a chunked body past what is held")
        #expect(room.taken == 2 * step, "a refusal keeps nothing")

        first.abandonBody()
        kept.removeAll()  // the upload's request, and with it its file, let go
        #expect(await eventually { room.taken == 0 }, "\(room.taken) bytes still taken once the upload's file was let go")
        var third = parser()
        buffer = InputBuffer()
        buffer.append(Array("PUT /u HTTP/1.1\r\nHost: a\r\nContent-Length: 20\r\n\r\n0123456789".utf8))
        guard case .request = third.next(&buffer) else {
            Issue.record("an upload with room was not dispatched")
            return
        }
        #expect(third.next(&buffer) == .needMore && room.taken == step)
    }

    /// Without a spool directory every body is held, as large as its limit allows.
    @Test func withoutASpoolDirectoryBodiesAreHeld() {
        var parser = RequestParser(limits: RequestParser.Limits(maxRequestLineBytes: 8192, maxHeaderBytes: 16384, maxHeaderCount: 100,
                                                                maxBodyBytes: 1 << 20, heldBodyBytes: Self.held))
        var buffer = InputBuffer()
        buffer.append(Array("PUT /u HTTP/1.1\r\nHost: a\r\nContent-Length: 20\r\n\r\n0123456789abcdefghij".utf8))
        guard case .request(let request) = parser.next(&buffer) else {
            Issue.record("no request")
            return
        }
        #expect(request.body == .bytes(Array("0123456789abcdefghij".utf8)))
    }

    private func withParser(_ body: (inout RequestParser) throws -> Void) throws {
        let directory = NSTemporaryDirectory() + "larder-request-spool-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var parser = RequestParser(limits: RequestParser.Limits(maxRequestLineBytes: 8192, maxHeaderBytes: 16384, maxHeaderCount: 100,
                                                                maxBodyBytes: 1 << 20, spoolDirectory: directory, heldBodyBytes: Self.held))
        try body(&parser)
        // Spool files have no name: nothing is left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    private static func contents(_ file: BodyFile, _ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let n = bytes.withUnsafeMutableBytes { file.read(into: $0, at: 0) }
        return Array(bytes[..<max(0, n)])
    }
}
