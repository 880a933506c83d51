import Dispatch
import Foundation
import HTTPCore
import Testing
@testable import Caching

/// An entry in line for the disk's writer is read from the line, then from its file once
/// written: a key asked again while the writer is behind does not go to the upstream again.
/// A newer answer not written supersedes what is in line or on disk for its key.
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

    /// A read from the line counts as a use, as a read of the file would: the entry, once
    /// written, wins a place it would lose asked once. A full tier of 100 blocks whose
    /// entries were each asked three times; the window holds one.
    @Test func aReadFromTheLineCountsInTheEntrysContest() async throws {
        let disk = try DiskTier(directory: temporaryDirectory(), budget: DiskTier.blockSize * 100, loadsIndex: true)
        await disk.waitForIndex()
        let asked = entry([("Cache-Control", "max-age=60")], body: "asked")
        for n in 0..<99 { disk.write("k\(n)", asked) }
        await disk.waitForWrites()
        for n in 0..<99 {
            #expect(await disk.read("k\(n)") == asked)
            #expect(await disk.read("k\(n)") == asked)
        }
        let writer = DispatchSemaphore(value: 0)
        disk.write("first", asked, whenDone: { writer.wait() })
        let wanted = entry([("Cache-Control", "max-age=60")], body: "wanted")
        disk.write("wanted", wanted)
        for _ in 0..<4 { #expect(await disk.read("wanted") == wanted, "in line: read from the line") }
        writer.signal()
        // Pushes "wanted" out of the window, into its contest with the oldest on probation.
        disk.write("next", asked)
        await disk.waitForWrites()
        #expect(disk.count == 100)
        #expect(await disk.read("wanted") == wanted, "asked five times: kept over an entry asked three")
    }

    /// An answer for a key that is not written (here larger than the whole write queue)
    /// takes the file it would have replaced with it: nothing older is read after it.
    @Test func aNewerAnswerNotWrittenTakesTheFileWithIt() async throws {
        let disk = try DiskTier(directory: temporaryDirectory(), budget: 1 << 24, writeQueueLimit: 2048)
        let older = entry([("Cache-Control", "max-age=60")], body: "older")
        disk.write("key", older)
        await disk.waitForWrites()
        let path = disk.path(for: DiskTier.name("key"))
        #expect(await disk.read("key") == older)
        #expect(!disk.write("key", entry([("Cache-Control", "max-age=60")], body: String(repeating: "n", count: 4000))))
        #expect(await disk.read("key") == nil, "the older file is no longer read")
        await disk.waitForWrites()
        #expect(disk.count == 0)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    /// The same with the older answer still in line: it is not read from the line, and its
    /// write, when its turn comes, leaves nothing indexed or on disk.
    @Test func aNewerAnswerNotWrittenTakesAnOlderInLineWithIt() async throws {
        let (disk, writer) = try await held()
        let older = entry([("Cache-Control", "max-age=60")], body: "older")
        disk.write("key", older)
        #expect(await disk.read("key") == older, "in line: read from the line")
        #expect(!disk.write("key", entry([], body: String(repeating: "n", count: 17 << 20))))
        #expect(await disk.read("key") == nil)
        writer.signal()
        await disk.waitForWrites()
        #expect(await disk.read("key") == nil)
        #expect(disk.count == 1, "only the entry the writer was held after")
        #expect(!FileManager.default.fileExists(atPath: disk.path(for: DiskTier.name("key"))))
    }

    /// The superseded file goes at once, not behind the writer's backlog: a process killed
    /// before the writer caught up would list it again at its next start.
    @Test func aSupersededFileGoesWhileTheWriterIsBehind() async throws {
        let disk = try DiskTier(directory: temporaryDirectory(), budget: 1 << 24, loadsIndex: true)
        await disk.waitForIndex()
        let older = entry([("Cache-Control", "max-age=60")], body: "older")
        disk.write("key", older)
        await disk.waitForWrites()
        let path = disk.path(for: DiskTier.name("key"))
        let writer = DispatchSemaphore(value: 0)
        disk.write("first", older, whenDone: { writer.wait() })
        #expect(!disk.write("key", entry([], body: String(repeating: "n", count: 17 << 20))))
        var gone = false
        for _ in 0..<100 where !gone {
            gone = !FileManager.default.fileExists(atPath: path)
            if !gone { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(gone, "the older file is still there while the writer is held")
        writer.signal()
        await disk.waitForWrites()
        #expect(await disk.read("key") == nil)
    }
}
