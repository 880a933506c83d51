#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Bodies
import Synchronization
import Testing

/// A body read at its readers' pace: the writer is held a window ahead of the slowest
/// reader and woken as readers move on; what all have passed is freed; a reader starting
/// behind that is refused, never sent zeros.
@Suite struct PacedStreamTests {
    final class Wakes: Sendable {
        let count = Atomic<Int>(0)
        var value: Int { count.load(ordering: .relaxed) }
        func wake() { count.add(1, ordering: .relaxed) }
    }

    private static let step = SpoolRoom.step
    private static let window = BodyStream.pacedWindow

    /// Writes `count` bytes a step at a time while the stream allows; how many it wrote.
    private static func write(_ stream: BodyStream, upTo count: Int, wakes: Wakes) -> Int {
        let chunk = [UInt8](repeating: 0x61, count: step)
        var written = 0
        while written < count, stream.mayWrite(step, wake: { wakes.wake() }) {
            guard chunk.withUnsafeBytes({ stream.append($0) }) else { break }
            written += step
        }
        return written
    }

    private static func allocated(_ file: BodyFile) -> Int {
        var info = stat()
        return fstat(file.descriptor, &info) == 0 ? Int(info.st_blocks) * 512 : -1
    }

    @Test func theWriterKeepsAWindowAheadOfTheSlowestReaderAndFreesWhatAllHavePassed() throws {
        let file = try #require(BodyFile.spool(in: NSTemporaryDirectory(), headRoom: 64 << 10))
        let stream = BodyStream(file: file, length: 64 << 20, start: file.headRoom)
        let fast = stream.track(from: stream.start)
        var slow: StreamCursor? = stream.track(from: stream.start)
        stream.pace()
        let wakes = Wakes()
        #expect(Self.write(stream, upTo: 64 << 20, wakes: wakes) == Self.window)
        // The fast reader alone does not let the writer on.
        fast.advance(to: stream.written)
        #expect(wakes.value == 0)
        // The slow one moving on does, once it is a step behind the window.
        slow?.advance(to: stream.start + 2 * Self.step)
        #expect(wakes.value == 1)
        #expect(Self.write(stream, upTo: 64 << 20, wakes: wakes) == 2 * Self.step)
        // The first whole step both passed is freed: a reader starting there is refused,
        // one starting at the slowest reader is not.
        #expect(stream.track(from: stream.start).isRefused)
        #expect(!stream.track(from: stream.start + 2 * Self.step).isRefused)
        #expect(Self.allocated(file) <= Self.window + Self.step, "\(Self.allocated(file)) bytes allocated")
        // The slow reader leaving lets the writer on as far as the fast one allows.
        #expect(wakes.value == 1)
        slow = nil
        #expect(wakes.value == 2)
        withExtendedLifetime(fast) {}
    }

    /// A held writer is woken when the stream ends (its readers all gone), so it stops.
    @Test func aHeldWriterIsWokenWhenTheStreamEnds() throws {
        let file = try #require(BodyFile.spool(in: NSTemporaryDirectory()))
        let stream = BodyStream(file: file, length: 64 << 20)
        let reader = stream.track(from: 0)
        stream.pace()
        let wakes = Wakes()
        _ = Self.write(stream, upTo: 64 << 20, wakes: wakes)
        #expect(!stream.mayWrite(Self.step) { wakes.wake() } && wakes.value == 0)
        stream.abandon()
        #expect(wakes.value == 1)
        #expect(stream.mayWrite(Self.step) { wakes.wake() })  // to find its next append refused
        withExtendedLifetime(reader) {}
    }

    /// A body not paced never holds its writer back, however far behind its readers are.
    @Test func aBodyNotPacedIsNeverHeldBack() throws {
        let stream = BodyStream(file: try #require(BodyFile.spool(in: NSTemporaryDirectory())), length: 64 << 20)
        let reader = stream.track(from: 0)
        #expect(Self.write(stream, upTo: 3 * Self.window, wakes: Wakes()) == 3 * Self.window)
        #expect(!stream.track(from: 0).isRefused)
        withExtendedLifetime(reader) {}
    }
}
