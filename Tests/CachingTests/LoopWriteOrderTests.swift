import Dispatch
import HTTPCore
import Testing
@testable import Caching

/// A disk write begun on an event loop reaches the writer thread only after the loop's turn;
/// it must still keep its place in line before what is asked for later.
@Suite struct LoopWriteOrderTests {
    /// Stands in for an event loop: always "current", keeping after-turn work until told to run it.
    final class HeldTurn: LoopReactor, @unchecked Sendable {
        /// Touched by the test's own task only.
        var held: [() -> Void] = []
        var isCurrent: Bool { true }
        func guest(for key: ObjectIdentifier, make: () -> any LoopGuest) -> any LoopGuest { make() }
        func watch(_ fd: Int32, readable: Bool, writable: Bool, for key: ObjectIdentifier) {}
        func setTimer(milliseconds: Int?, for key: ObjectIdentifier) {}
        func afterTurn(_ work: @escaping () -> Void) { held.append(work) }
        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            DispatchQueue.global().async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
        }
        func endTurn() {
            let work = held
            held = []
            work.forEach { $0() }
        }
    }

    private let sample = entry([("ETag", "\"a\"")], requested: 1, received: 2, body: "kept")

    @Test func aRemovalAskedForAfterALoopsWriteRunsAfterIt() async throws {
        let disk = try DiskTier(directory: temporaryDirectory(), budget: 1 << 20)
        let turn = HeldTurn()
        LoopExecutor.$current.withValue(turn) { disk.write("key", sample) }
        #expect(turn.held.count == 1)
        // The loop has not finished its turn: the write waits, yet the removal runs after it.
        await disk.remove("key")
        turn.endTurn()
        await disk.waitForWrites()
        #expect(await disk.read("key") == nil)
        #expect(disk.count == 0)
    }

    @Test func aLoopsWriteStartsWhenItsTurnEnds() async throws {
        let disk = try DiskTier(directory: temporaryDirectory(), budget: 1 << 20)
        let turn = HeldTurn()
        LoopExecutor.$current.withValue(turn) { disk.write("key", sample) }
        try await Task.sleep(for: .milliseconds(50))
        #expect(disk.count == 0)  // not handed to the writer yet
        turn.endTurn()
        await disk.waitForWrites()
        #expect(await disk.read("key") == sample)
    }
}
