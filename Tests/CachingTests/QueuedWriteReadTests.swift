import Dispatch
import HTTPCore
import Testing
@testable import Caching

/// An entry in line for the disk's writer is read from the line, then from its file once
/// written: a key asked again while the writer is behind does not go to the upstream again.
@Suite(.timeLimit(.minutes(1))) struct QueuedWriteReadTests {
    private func held() async throws -> (DiskTier, DispatchSemaphore) {
        let disk = try DiskTier(directory: temporaryDirectory(), budget: 1 << 24, loadsIndex: true)
        await disk.waitForIndex()
        let writer = DispatchSemaphore(value: 0)
        // The writer stops once this entry is written, until the test lets it go on.
        disk.write("first", entry([("Cache-Control", "max-age=60")], body: "first"), whenDone: { writer.wait() })
        return (disk, writer)
    }

    @Test func anEntryWaitingForTheWriterIsRead() async throws {
        let (disk, writer) = try await held()
        let second = entry([("Cache-Control", "max-age=60")], body: "second")
        disk.write("second", second)
        #expect(disk.queuedWrites.entries >= 1, "the second waits for the writer, held after the first")
        #expect(await disk.read("second") == second, "in line: read from the line")
        writer.signal()
        await disk.waitForWrites()
        #expect(disk.queuedWrites.entries == 0)
        #expect(disk.count == 2)
        #expect(await disk.read("second") == second, "written: read from its file")
    }

    /// Two answers in line under one key: the newer is read, before and after the older is
    /// written, and is what the file holds at the end.
    @Test func theNewerOfTwoInLineIsRead() async throws {
        let (disk, writer) = try await held()
        let older = entry([("Cache-Control", "max-age=60")], body: "older")
        let newer = entry([("Cache-Control", "max-age=60")], body: "newer")
        disk.write("key", older)
        disk.write("key", newer)
        #expect(await disk.read("key") == newer)
        writer.signal()
        await disk.waitForWrites()
        #expect(await disk.read("key") == newer)
    }
}
