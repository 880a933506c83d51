import Foundation
import Bodies
import Synchronization
import Testing

/// A body still arriving: what readers may send, when they are woken, how it ends.
@Suite struct BodyStreamTests {
    final class Wakes: Sendable {
        let count = Atomic<Int>(0)
        var value: Int { count.load(ordering: .relaxed) }
        func wake() { count.add(1, ordering: .relaxed) }
    }

    private static func stream(length: Int) throws -> BodyStream {
        BodyStream(file: try #require(BodyFile.spool(in: NSTemporaryDirectory())), length: length)
    }

    private static func append(_ stream: BodyStream, _ count: Int) -> Bool {
        [UInt8](repeating: 0x61, count: count).withUnsafeBytes { stream.append($0) }
    }

    /// A waiting reader is woken by the next write, once; a reader behind what is written
    /// is not kept waiting at all.
    @Test func aReaderIsWokenByTheNextWriteOnlyOnce() throws {
        let stream = try Self.stream(length: 4 << 20)
        let wakes = Wakes()
        #expect(stream.wait(beyond: 0) { wakes.wake() })
        #expect(wakes.value == 0)
        #expect(Self.append(stream, 16 << 10))
        #expect(wakes.value == 1 && stream.progress == .written(16 << 10))
        #expect(Self.append(stream, 16 << 10))
        #expect(wakes.value == 1)  // woken once: a reader waits again if it must
        #expect(!stream.wait(beyond: 0) { wakes.wake() })
        #expect(stream.wait(beyond: 32 << 10) { wakes.wake() })
    }

    /// The end wakes every reader, says whether the body is whole, and happens once.
    @Test func theEndWakesReadersAndTellsWhetherTheBodyIsWhole() throws {
        let stream = try Self.stream(length: 100)
        let wakes = Wakes()
        let outcomes = Mutex<[Bool]>([])
        #expect(Self.append(stream, 60))
        #expect(stream.wait(beyond: 60) { wakes.wake() })
        stream.whenFinished { whole in outcomes.withLock { $0.append(whole) } }
        #expect(!Self.append(stream, 41))  // past the stated length
        stream.finish(succeeded: true)  // 60 of 100 bytes: not whole
        stream.finish(succeeded: true)
        #expect(wakes.value == 1 && stream.progress == .failed && outcomes.withLock { $0 } == [false])
        stream.whenFinished { whole in outcomes.withLock { $0.append(whole) } }  // after the end: at once
        #expect(outcomes.withLock { $0 } == [false, false])

        let whole = try Self.stream(length: 10)
        #expect(Self.append(whole, 10))
        whole.finish(succeeded: true)
        #expect(whole.progress == .complete)
    }
}
