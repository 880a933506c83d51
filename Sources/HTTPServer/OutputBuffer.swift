#if canImport(Glibc)
import Glibc
#endif
import HTTPCore
import Bodies

/// What a connection owes its client and has not sent, in the order it leaves: bytes the
/// serializer rendered (`bytes`: heads and small bodies, a dozen small pieces per response)
/// and bodies shared with whoever made them (a stored answer's), which are never copied. A
/// client that reads nothing then holds a reference to a body that any number of others are
/// sent too, not a copy of it each.
///
/// Measured: rendering into raw storage rather than `[UInt8]` took a memory hit from 15,732
/// to 14,942 instructions (gate path memory-hit).
struct OutputBuffer: ~Copyable {
    var bytes = ByteBuffer(capacity: 512)
    /// Bytes from the front of `bytes` already sent.
    private var sent = 0
    /// Shared bodies, each to leave once `bytes` has been sent up to its `at`; those before
    /// `nextSplice` are sent, and `spliceSent` bytes of that one.
    private var splices: [Splice] = []
    private var nextSplice = 0
    private var spliceSent = 0
    /// Bytes of shared bodies not yet sent.
    private var splicedPending = 0

    private struct Splice {
        let at: Int
        let body: Body
        let range: Range<Int>
        /// For a body that runs to the end of an open-ended stream (`range` unused): whether
        /// it is framed as chunks (HTTP/1.1) or sent as it is, ended by the close (HTTP/1.0).
        var chunked: Bool? = nil
        /// Told the body bytes sent once it has gone whole, or when the rest never will.
        var whenSent: (@Sendable (Int) -> Void)? = nil
        /// This reader's place in a body still arriving, which the stream's writer may be held
        /// to (`BodyStream.pace`); let go with the splice.
        var cursor: StreamCursor? = nil
        /// Sent from a file (a file or stream region), holding no memory.
        var inFile: Bool { !body.isInMemory }

        /// Whether what comes before it may wait for it (`MSG_MORE`): not for a body still
        /// arriving, since the kernel holds a partial segment sent with `MSG_MORE` until more
        /// is sent (or 200 ms pass), so a head would wait for the origin's first body bytes.
        var isReadyToFollow: Bool {
            if case .stream = body { return false }
            return true
        }
    }
    /// Bytes of `splicedPending` sent from files.
    private var filePending = 0
    /// The open-ended body under way, when the splice at `nextSplice` is one (`spliceSent`
    /// counts its data sent): framing not yet sent (a chunk's size line, the CRLF closing a
    /// chunk, the last chunk), and bytes of the current chunk still to go.
    private var framing: [UInt8] = []
    private var framingSent = 0
    private var chunkLeft = 0
    private var lastChunkQueued = false

    /// Storage beyond this is given back once everything in it is sent. Small, because every
    /// connection keeps what it kept: 300 connections at 256 KiB each held 75 MB, and bodies
    /// that would need more are shared, not copied in.
    static let keptCapacity = 16 * 1024

    /// Bodies at least this long are shared rather than copied. A copy of a small body is a
    /// `memcpy` beside the head, in the same send; a shared one costs a send of its own.
    static let sharedBodyMinimum = 16 * 1024

    /// Bytes written and not yet sent.
    var pending: Int { bytes.count - sent + splicedPending }
    /// Bytes not yet sent that take memory: what the server's output budget counts.
    var pendingInMemory: Int { pending - filePending }

    /// Queues `range` of `body` after the bytes written so far, without copying it (a file
    /// region is sent from the file).
    mutating func share(_ body: Body, _ range: Range<Int>, whenSent: (@Sendable (Int) -> Void)? = nil) {
        guard !range.isEmpty else {
            whenSent?(0)
            return
        }
        var splice = Splice(at: bytes.count, body: body, range: range, whenSent: whenSent)
        if case .stream(let region) = body { splice.cursor = region.stream.track(from: region.offset + range.lowerBound) }
        splices.append(splice)
        splicedPending += range.count
        if splice.inFile { filePending += range.count }
    }

    /// Queues a body that runs to the end of an open-ended stream, its length not known yet:
    /// it counts as one byte pending (in a file) until its end has been sent.
    mutating func shareToTheEnd(_ region: StreamRegion, chunked: Bool, whenSent: (@Sendable (Int) -> Void)? = nil) {
        splices.append(Splice(at: bytes.count, body: .stream(region), range: 0..<0, chunked: chunked, whenSent: whenSent,
                              cursor: region.stream.track(from: region.offset)))
        splicedPending += 1
        filePending += 1
    }

    /// The next run of unsent bytes that lies in one piece of memory or one file, and whether
    /// more follows it (then a sender says `MSG_MORE`, so a head and its shared body share
    /// packets). Empty when nothing is pending. Mutating only to frame an open-ended body:
    /// a chunk's size is fixed when its size line is first offered.
    mutating func withNextPiece<R, E: Error>(_ body: (OutputPiece, _ moreFollows: Bool) throws(E) -> R) throws(E) -> R {
        if nextSplice < splices.count, splices[nextSplice].at == sent, let chunked = splices[nextSplice].chunked,
           case .stream(let region) = splices[nextSplice].body {
            if splices[nextSplice].cursor?.isRefused == true { return try body(.failed, false) }
            if let piece = nextOpenEndedPiece(region, chunked: chunked) { return try body(piece, false) }
            if framingSent < framing.count {
                // A size line is followed by its data at once; the rest need not wait for more.
                let more = chunkLeft > 0 || sent < bytes.count || nextSplice + 1 < splices.count
                return try Self.withPiece(of: framing, framingSent..<framing.count, more: more, body)
            }
            // It ended just now (sent as it is, up to the close; nothing but bytes follows it).
        }
        if nextSplice < splices.count, splices[nextSplice].at == sent {
            let splice = splices[nextSplice]
            let more = sent < bytes.count || nextSplice + 1 < splices.count
            let start = splice.range.lowerBound + spliceSent
            switch splice.body {
            case .file(let region):
                return try body(.file(descriptor: region.file.descriptor, offset: region.offset + start, count: splice.range.upperBound - start), more)
            case .stream(let region):
                if splice.cursor?.isRefused == true { return try body(.failed, more) }
                return try body(Self.streamPiece(region, from: region.offset + start, to: region.offset + splice.range.upperBound), more)
            case .bytes(let shared):
                return try Self.withPiece(of: shared, start..<splice.range.upperBound, more: more, body)
            }
        }
        let end = nextSplice < splices.count ? splices[nextSplice].at : bytes.count
        return try bytes.withBytes(from: sent) { rest throws(E) in
            try body(.bytes(UnsafeRawBufferPointer(rebasing: rest[..<(end - sent)])),
                     end < bytes.count || (nextSplice < splices.count && splices[nextSplice].isReadyToFollow))
        }
    }

    /// `range` of `bytes` as a piece.
    private static func withPiece<R, E: Error>(of bytes: [UInt8], _ range: Range<Int>, more: Bool,
                                               _ body: (OutputPiece, _ moreFollows: Bool) throws(E) -> R) throws(E) -> R {
        // Array's closure throws untyped errors: the typed one is carried out in a Result.
        let outcome: Result<R, E> = bytes.withUnsafeBytes { all in
            do throws(E) {
                return .success(try body(.bytes(UnsafeRawBufferPointer(rebasing: all[range])), more))
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }

    /// Every unsent piece in order, nothing marked sent (for tests).
    func forEachPiece(_ body: (UnsafeRawBufferPointer) -> Void) {
        var position = sent
        var splice = nextSplice
        var skip = spliceSent
        while true {
            if splice < splices.count, splices[splice].at == position {
                let piece = splices[splice]
                let range = (piece.range.lowerBound + skip)..<piece.range.upperBound
                switch piece.body {
                case .bytes(let shared):
                    shared.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[range])) }
                case .file(let region):
                    Self.read(region.file, at: region.offset + range.lowerBound, count: range.count, body)
                case .stream(let region):
                    // An open-ended body's pieces exist only as it is sent (`withNextPiece`).
                    Self.read(region.stream.file, at: region.offset + range.lowerBound, count: range.count, body)
                }
                splice += 1
                skip = 0
                continue
            }
            let end = splice < splices.count ? splices[splice].at : bytes.count
            guard position < end else { return }
            bytes.withBytes(from: position) { body(UnsafeRawBufferPointer(rebasing: $0[..<(end - position)])) }
            position = end
        }
    }

    /// The open-ended body's next piece: its data as far as written, or a wait, or a failure;
    /// nil when framing is to go next (queued here), or when the body has just ended.
    private mutating func nextOpenEndedPiece(_ region: StreamRegion, chunked: Bool) -> OutputPiece? {
        guard framingSent == framing.count else { return nil }
        let position = region.offset + spliceSent
        let descriptor = region.stream.file.descriptor
        if chunkLeft > 0 { return .file(descriptor: descriptor, offset: position, count: chunkLeft) }
        let available: Int
        switch region.stream.progress {
        case .failed:
            return .failed
        case .written(let written):
            guard written > position else { return .waiting(region.stream, position: position) }
            available = written - position
        case .complete:
            available = region.stream.written - position
            guard available == 0 else { break }
            if chunked, !lastChunkQueued {
                queueFraming(Array("0\r\n\r\n".utf8))
                lastChunkQueued = true
            } else if !chunked {
                endOpenEnded()
            }
            return nil
        }
        chunkLeft = available
        guard chunked else { return .file(descriptor: descriptor, offset: position, count: available) }
        queueFraming(Array(String(available, radix: 16).utf8) + [13, 10])
        return nil
    }

    private mutating func queueFraming(_ bytes: [UInt8]) {
        framing = bytes
        framingSent = 0
    }

    /// `n` bytes of the open-ended body under way went out (framing or data).
    private mutating func markOpenEndedSent(_ n: Int, chunked: Bool) {
        if framingSent < framing.count {
            precondition(n <= framing.count - framingSent, "more bytes sent than were offered")
            framingSent += n
            if framingSent == framing.count, lastChunkQueued { endOpenEnded() }
            return
        }
        precondition(n <= chunkLeft, "more bytes sent than were offered")
        spliceSent += n
        chunkLeft -= n
        if case .stream(let region) = splices[nextSplice].body { splices[nextSplice].cursor?.advance(to: region.offset + spliceSent) }
        if chunkLeft == 0, chunked { queueFraming([13, 10]) }
    }

    /// The open-ended body under way has gone whole: on to what follows it.
    private mutating func endOpenEnded() {
        splices[nextSplice].whenSent?(spliceSent)
        nextSplice += 1
        spliceSent = 0
        splicedPending -= 1
        filePending -= 1
        framing = []
        framingSent = 0
        chunkLeft = 0
        lastChunkQueued = false
        resetIfAllSent()
    }

    /// What of a stream's region `start..<end` can be sent now.
    private static func streamPiece(_ region: StreamRegion, from start: Int, to end: Int) -> OutputPiece {
        let descriptor = region.stream.file.descriptor
        switch region.stream.progress {
        case .complete: return .file(descriptor: descriptor, offset: start, count: end - start)
        case .failed: return .failed
        case .written(let written):
            return written > start ? .file(descriptor: descriptor, offset: start, count: min(written, end) - start)
                                   : .waiting(region.stream, position: start)
        }
    }

    /// The bytes of a file region, read (for tests; senders use `sendfile`).
    private static func read(_ file: BodyFile, at offset: Int, count: Int, _ body: (UnsafeRawBufferPointer) -> Void) {
        var copy = [UInt8](repeating: 0, count: count)
        let read = copy.withUnsafeMutableBytes { file.read(into: $0, at: offset) }
        copy.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[..<max(0, read)])) }
    }

    /// `n` more bytes went out. Once all have, writing starts again at the front.
    mutating func markSent(_ n: Int) {
        if nextSplice < splices.count, splices[nextSplice].at == sent, let chunked = splices[nextSplice].chunked {
            return markOpenEndedSent(n, chunked: chunked)
        }
        precondition(n >= 0 && n <= pending, "more bytes sent than were pending")
        var left = n
        while left > 0 {
            if nextSplice < splices.count, splices[nextSplice].at == sent {
                let remaining = splices[nextSplice].range.count - spliceSent
                let taken = min(left, remaining)
                spliceSent += taken
                if let cursor = splices[nextSplice].cursor, case .stream(let region) = splices[nextSplice].body {
                    cursor.advance(to: region.offset + splices[nextSplice].range.lowerBound + spliceSent)
                }
                splicedPending -= taken
                if splices[nextSplice].inFile { filePending -= taken }
                left -= taken
                if taken == remaining {
                    splices[nextSplice].whenSent?(splices[nextSplice].range.count)
                    nextSplice += 1
                    spliceSent = 0
                }
            } else {
                let end = nextSplice < splices.count ? splices[nextSplice].at : bytes.count
                let taken = min(left, end - sent)
                sent += taken
                left -= taken
            }
        }
        resetIfAllSent()
    }

    /// The connection closes with these bodies unsent or part sent: each is told what went.
    mutating func abandon() {
        for index in nextSplice..<splices.count {
            splices[index].whenSent?(index == nextSplice ? spliceSent : 0)
            splices[index].whenSent = nil
        }
    }

    /// Once everything is sent, writing starts again at the front; meanwhile a large sent
    /// part is dropped from the front.
    @inline(__always)
    private mutating func resetIfAllSent() {
        // A splice at the very end is sent once its bytes are; then everything is.
        guard sent == bytes.count, nextSplice == splices.count else {
            if sent >= Self.compactionThreshold, sent >= bytes.count / 2 { dropSent() }
            return
        }
        sent = 0
        bytes.removeAll(keepingCapacity: bytes.capacity <= Self.keptCapacity)
        splices.removeAll(keepingCapacity: splices.count <= 16)
        nextSplice = 0
    }

    /// Sent bytes this many or more, and at least half of what is written, are dropped from
    /// the front while the rest still waits: a client that reads slowly while answers keep
    /// being added otherwise holds everything written since it last caught up.
    static let compactionThreshold = 64 * 1024

    /// Moves what is unsent to the front, and the shared bodies still to come with it.
    private mutating func dropSent() {
        bytes.removeFront(sent)
        splices.removeFirst(nextSplice)
        for index in splices.indices {
            let splice = splices[index]
            splices[index] = Splice(at: splice.at - sent, body: splice.body, range: splice.range, chunked: splice.chunked,
                                    whenSent: splice.whenSent, cursor: splice.cursor)
        }
        nextSplice = 0
        sent = 0
    }
}

/// One piece of output as a sender takes it: bytes to `send`, or a file region to `sendfile`;
/// or, for a body still arriving, nothing yet (wait for the stream past `position`) or never
/// (the transfer failed: the client was promised bytes that will not come, so close).
enum OutputPiece {
    case bytes(UnsafeRawBufferPointer)
    case file(descriptor: Int32, offset: Int, count: Int)
    case waiting(BodyStream, position: Int)
    case failed
}
