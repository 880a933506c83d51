import Foundation
import HTTPCore
import Bodies
import Testing
@testable import Caching

/// Small new entries made at their own name once the directory is listed: the same entry
/// read back as through a temporary file, a name already taken still replaced whole, a
/// planted symlink never followed, and the empty file a killed write leaves not taken for
/// damage.
@Suite(.timeLimit(.minutes(2))) struct WriteInPlaceTests {
    private let sample = entry([("Cache-Control", "max-age=60")], requested: 10, received: 11, body: "{\"t\":1}")

    private func listed(_ directory: String = temporaryDirectory(), unnamedFiles: Bool = true) async throws -> DiskTier {
        let disk = try DiskTier(directory: directory, budget: 1 << 24, loadsIndex: true, unnamedFiles: unnamedFiles)
        await disk.waitForIndex()
        return disk
    }

    @Test func onlySmallEntriesAndOnlyOnceTheDirectoryIsListed() throws {
        let disk = try DiskTier(directory: temporaryDirectory(), budget: 1 << 24, loadsIndex: false)
        #expect(!disk.writesInPlace(100), "while listing, a read by name could meet the file half written")
        disk.loadListing()
        #expect(disk.writesInPlace(100))
        #expect(disk.writesInPlace(DiskTier.largestWrittenInPlace))
        #expect(!disk.writesInPlace(DiskTier.largestWrittenInPlace + 1))
    }

    /// With the temporary folder a file, only a write in place can succeed: the small entry
    /// is stored, the large one fails.
    @Test func aSmallEntryNeedsNoTemporaryFile() async throws {
        let directory = temporaryDirectory()
        let disk = try await listed(directory, unnamedFiles: false)
        #expect(rmdir(directory + "/tmp") == 0)
        #expect(FileManager.default.createFile(atPath: directory + "/tmp", contents: Data()))
        let large = entry([("Cache-Control", "max-age=60")], body: String(repeating: "x", count: 5000))
        disk.write("small", sample)
        disk.write("large", large)
        await disk.waitForWrites()
        #expect(await disk.read("small") == sample)
        #expect(await disk.read("large") == nil)
        #expect(disk.failedWrites == 1)
    }

    /// The way larger entries go where unnamed files cannot be made: a temporary file,
    /// its folder made again when it is gone.
    @Test func aLargeEntryGoesThroughATemporaryFileMadeAgainIfGone() async throws {
        let directory = temporaryDirectory()
        let disk = try await listed(directory, unnamedFiles: false)
        #expect(rmdir(directory + "/tmp") == 0)
        let large = entry([("Cache-Control", "max-age=60")], body: String(repeating: "x", count: 5000))
        disk.write("large", large)
        await disk.waitForWrites()
        #expect(await disk.read("large") == large)
        #expect(disk.failedWrites == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory + "/tmp").isEmpty)
    }

    @Test func anEntryReplacedIsTheNewOne() async throws {
        let disk = try await listed()
        let newer = entry([("Cache-Control", "max-age=60")], requested: 20, received: 21, body: "{\"t\":2}")
        disk.write("key", sample)
        await disk.waitForWrites()
        #expect(await disk.read("key") == sample)
        disk.write("key", newer)
        await disk.waitForWrites()
        #expect(await disk.read("key") == newer)
        #expect(disk.count == 1 && disk.failedWrites == 0)
    }

    @Test func aFileUnderTheNameButNotIndexedIsReplacedWhole() async throws {
        let disk = try await listed()
        let path = disk.path(for: DiskTier.name("key"))
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(repeating: 0x41, count: 9000)))
        disk.write("key", sample)
        await disk.waitForWrites()
        #expect(await disk.read("key") == sample)
        #expect(disk.corruptions == 0)
    }

    @Test func aSymlinkedFolderIsReplacedNotFollowed() async throws {
        let directory = temporaryDirectory()
        let disk = try await listed(directory)
        let outside = temporaryDirectory()
        let folder = directory + "/" + DiskTier.name("key").hex.prefix(2)
        #expect(symlink(outside, folder) == 0)
        disk.write("key", sample)
        await disk.waitForWrites()
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside).isEmpty)
        var info = stat()
        #expect(lstat(folder, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR)
        #expect(await disk.read("key") == sample)
    }

    /// A process killed between making the file and writing it leaves it empty.
    private func emptyFile(for key: CacheKey, in directory: String) throws -> String {
        let hex = DiskTier.name(key).hex
        try FileManager.default.createDirectory(atPath: directory + "/" + hex.prefix(2), withIntermediateDirectories: true)
        let path = directory + "/" + hex.prefix(2) + "/" + hex
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        return path
    }

    @Test func anEmptyFileIsRemovedAtStartNotIndexedNorCountedAsDamage() async throws {
        let directory = temporaryDirectory()
        let path = try emptyFile(for: "key", in: directory)
        let disk = try await listed(directory)
        #expect(disk.count == 0)
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(await disk.read("key") == nil)
        #expect(disk.corruptions == 0)
    }

    @Test func anEmptyFileReadByNameWhileListingIsAMissNotDamage() async throws {
        let directory = temporaryDirectory()
        let path = try emptyFile(for: "key", in: directory)
        let disk = try DiskTier(directory: directory, budget: 1 << 24, loadsIndex: false)
        #expect(await disk.read("key") == nil)
        #expect(disk.corruptions == 0)
        disk.loadListing()
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(disk.count == 0)
    }
}
