import Dispatch
import HTTPCore
import Bodies
import LoopGuests
import Testing
@testable import Caching

/// A disk write begun on an event loop reaches the writer thread only after the loop's turn;
/// it must still keep its place in line before what is asked for later.
@Suite struct LoopWriteOrderTests {
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
