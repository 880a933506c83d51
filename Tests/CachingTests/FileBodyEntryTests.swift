#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPCore
import Bodies
import Testing
import TestSupport
@testable import Caching

/// Entries too large to read whole: written around a body that lies in a spool file, read
/// back as a region of their own file, and checked once per process against their checksum.
@Suite(.timeLimit(.minutes(1))) struct FileBodyEntryTests {
    private static let size = DiskTier.largestReadWhole + 12_345

    /// A spooled body of `size` bytes with a pattern no two neighbouring megabytes share.
    private static func spooled(in directory: String) throws -> (body: [UInt8], entry: CacheEntry) {
        let body = patternBytes(size)
        let file = try #require(BodyFile.spool(in: directory))
        #expect(body.withUnsafeBytes { file.write($0, at: 0) })
        let entry = CacheEntry(status: 200, headers: [("Cache-Control", "max-age=60"), ("ETag", "\"big\"")],
                               body: .file(FileRegion(file: file, offset: 0, count: size)),
                               requestTime: Date(timeIntervalSince1970: 10), responseTime: Date(timeIntervalSince1970: 11))
        return (body, entry)
    }

    /// The bytes of a body, read from its file when it is a region.
    private static func contents(_ body: Body) -> [UInt8]? {
        switch body {
        case .bytes(let bytes): return bytes
        case .file(let region):
            var bytes = [UInt8](repeating: 0, count: region.count)
            let n = bytes.withUnsafeMutableBytes { region.file.read(into: $0, at: region.offset) }
            return n == region.count ? bytes : nil
        case .stream:
            return nil
        }
    }

    @Test func aLargeEntryIsReadBackAsARegionOfItsFileByteForByte() async throws {
        let directory = temporaryDirectory()
        let (body, entry) = try Self.spooled(in: directory)
        let disk = try DiskTier(directory: directory, budget: 1 << 30)
        #expect(disk.write("big", entry))
        await disk.waitForWrites()
        let read = try #require(await disk.read("big"))
        guard case .file(let region) = read.body else {
            Issue.record("a large entry was read into memory")
            return
        }
        #expect(region.count == Self.size && sameBytes(Self.contents(read.body) ?? [], body))
        #expect(read.status == 200 && read.etag == "\"big\"" && read.responseTime == Date(timeIntervalSince1970: 11))
        // Found again after a restart, its checksum taken on the first read.
        let reopened = try DiskTier(directory: directory, budget: 1 << 30)
        let again = await reopened.read("big").flatMap { Self.contents($0.body) }
        #expect(sameBytes(again ?? [], body))
        #expect(reopened.corruptions == 0)
    }

    /// A flipped byte deep in the body is found on the first read after a restart (the
    /// checksum is taken then), and the file is removed: a miss, never wrong bytes.
    @Test func aDamagedLargeEntryIsAMissAndRemoved() async throws {
        let directory = temporaryDirectory()
        let (_, entry) = try Self.spooled(in: directory)
        let disk = try DiskTier(directory: directory, budget: 1 << 30)
        disk.write("big", entry)
        await disk.waitForWrites()
        let path = disk.path(for: DiskTier.name("big"))
        let fd = open(path, O_WRONLY)
        #expect(fd >= 0)
        var flipped: UInt8 = 0xA5
        #expect(pwrite(fd, &flipped, 1, off_t(Self.size / 2)) == 1)
        close(fd)
        let reopened = try DiskTier(directory: directory, budget: 1 << 30)
        #expect(await reopened.read("big") == nil)
        #expect(reopened.corruptions == 1 && !FileManager.default.fileExists(atPath: path))
    }

    /// An entry larger than the whole disk budget is not written (it could only evict
    /// everything, then itself), and the caller is told.
    @Test func anEntryLargerThanTheBudgetIsNotTaken() async throws {
        let directory = temporaryDirectory()
        let (_, entry) = try Self.spooled(in: directory)
        let disk = try DiskTier(directory: directory, budget: 1 << 20)
        #expect(!disk.write("big", entry))
        #expect(disk.skippedWrites == 1)
    }

    /// A body in a file is never held by the memory tier: a hit on it comes from the disk.
    @Test func theMemoryTierRefusesABodyInAFile() throws {
        let (_, entry) = try Self.spooled(in: temporaryDirectory())
        let memory = MemoryTier(budget: 1 << 30)
        let response = StoredResponse(entry: entry, rendered: RenderedResponse(relaying: entry))
        #expect(!memory.set("big", .response(response)))
        #expect(memory.get("big") == nil)
    }
}
