import Dispatch
import HTTPCore
import Testing
@testable import Caching

/// A disk write begun on an event loop reaches the writer thread only `DiskTier.writerDelay`
/// after it, by a deadline of the loop; it must still keep its place in line before what is
/// asked for later.
@Suite struct LoopWriteOrderTests {
    private let sample = entry([("ETag", "\"a\"")], requested: 1, received: 2, body: "kept")

    @Test func aRemovalAskedForAfterALoopsWriteRunsAfterIt() async throws {
        let disk = try DiskTier(directory: temporaryDirectory(), budget: 1 << 20)
        let turn = HeldTurn()
        LoopExecutor.$current.withValue(turn) { disk.write("key", sample) }
        #expect(turn.armed.count == 1)
        // The writer has not been handed the write: yet the removal runs after it.
        await disk.remove("key")
        try await Task.sleep(for: DiskTier.writerDelay)
        turn.fireTimers()
        await disk.waitForWrites()
        #expect(await disk.read("key") == nil)
        #expect(disk.count == 0)
    }

    @Test func aLoopsWritesStartWhenTheirOneDeadlinePasses() async throws {
        let disk = try DiskTier(directory: temporaryDirectory(), budget: 1 << 20)
        let turn = HeldTurn()
        LoopExecutor.$current.withValue(turn) {
            disk.write("first", sample)
            disk.write("second", sample)
        }
        #expect(turn.armed.count == 1)
        #expect(turn.held.isEmpty)
        try await Task.sleep(for: .milliseconds(50))
        #expect(disk.count == 0)  // not handed to the writer yet
        turn.fireTimers()
        #expect(turn.armed.isEmpty)
        // Written without anything else asking the writer to run.
        for _ in 0..<1000 where disk.count < 2 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(disk.count == 2)
        #expect(await disk.read("second") == sample)
    }

    @Test func aWriteAfterTheDeadlineFiredArmsAnother() async throws {
        let disk = try DiskTier(directory: temporaryDirectory(), budget: 1 << 20)
        let turn = HeldTurn()
        LoopExecutor.$current.withValue(turn) { disk.write("first", sample) }
        try await Task.sleep(for: DiskTier.writerDelay)
        turn.fireTimers()
        LoopExecutor.$current.withValue(turn) { disk.write("second", sample) }
        #expect(turn.armed.count == 1)
        try await Task.sleep(for: DiskTier.writerDelay)
        turn.fireTimers()
        for _ in 0..<1000 where disk.count < 2 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(disk.count == 2)
    }
}
