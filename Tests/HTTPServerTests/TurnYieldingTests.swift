@testable import HTTPServer
import Testing

/// When a busy loop gives its core away between turns, with the instants given rather than
/// waited for.
@Suite struct TurnYieldingTests {
    let millisecond: UInt64 = 1_000_000

    @Test func aLoopWhoseYieldsComeBackInTimeYieldsAfterEveryTurn() {
        var yielding = TurnYielding()
        var now: UInt64 = 10 * millisecond
        for _ in 0..<100 {
            #expect(yielding.isDue(at: now))
            // The thread it yielded to answered and blocked again within 50 µs.
            yielding.yielded(at: now, backAt: now + 50_000)
            now += 200_000
        }
        #expect(yielding.pause == 0)
        // Exactly the limit still counts as in time.
        yielding.yielded(at: now, backAt: now + TurnYielding.longest)
        #expect(yielding.isDue(at: now + TurnYielding.longest))
    }

    /// wrk's batches at 256 connections hold a yielded core for one to two milliseconds;
    /// CPU-bound work holds it to the next tick.
    @Test func aClientsLongBatchIsInTimeAndATickIsLate() {
        var yielding = TurnYielding()
        let now: UInt64 = 10 * millisecond
        yielding.yielded(at: now, backAt: now + 1_800_000)
        #expect(yielding.pause == 0 && yielding.isDue(at: now + 1_800_000))
        yielding.yielded(at: now, backAt: now + 4 * millisecond)
        #expect(yielding.pause == 4 * millisecond)
    }

    @Test func aLateYieldStartsAPauseThatDoublesUpToItsCap() {
        var yielding = TurnYielding()
        var now: UInt64 = 10 * millisecond
        var pauses: [UInt64] = []
        for _ in 0..<9 {
            #expect(yielding.isDue(at: now))
            // CPU-bound work kept the core until the next tick.
            let back = now + 4 * millisecond
            yielding.yielded(at: now, backAt: back)
            pauses.append(yielding.pause)
            #expect(!yielding.isDue(at: back), "no yield right after a late one")
            #expect(!yielding.isDue(at: back + yielding.pause - 1))
            now = back + yielding.pause
        }
        #expect(pauses.map { $0 / millisecond } == [4, 8, 16, 32, 64, 128, 256, 256, 256])
    }

    @Test func aYieldBackInTimeEndsThePausing() {
        var yielding = TurnYielding()
        let start: UInt64 = 10 * millisecond
        yielding.yielded(at: start, backAt: start + 3 * millisecond)
        yielding.yielded(at: yielding.resumeAt, backAt: yielding.resumeAt + 3 * millisecond)
        #expect(yielding.pause == 8 * millisecond)
        let resume = yielding.resumeAt
        yielding.yielded(at: resume, backAt: resume + 20_000)
        #expect(yielding.pause == 0)
        #expect(yielding.isDue(at: resume + 20_000))
        // The next late one starts again from the first pause.
        yielding.yielded(at: resume + 100_000, backAt: resume + 5 * millisecond)
        #expect(yielding.pause == TurnYielding.firstPause)
    }
}
