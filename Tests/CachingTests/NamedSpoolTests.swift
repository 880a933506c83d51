#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPCore
import Bodies
import Testing
import TestSupport
@testable import Caching

/// A whole answer's spool file becomes its disk entry where it lies: its head written into
/// the room left before the body and the file named, not copied; anything that cannot be
/// named so is copied as before. Either way the entry reads back whole, after a restart too.
@Suite(.timeLimit(.minutes(1))) struct NamedSpoolTests {
    private static let size = DiskTier.largestReadWhole + 12_345
    private static let body = patternBytes(size)

    /// A spool file as a transfer leaves it, its body after the head room.
    private static func spooled(in directory: String, headers: HTTPHeaders = [("Cache-Control", "max-age=60")]) throws -> CacheEntry {
        let file = try #require(BodyFile.spool(in: directory, headRoom: HeldAnswer.spoolHeadRoom))
        #expect(body.withUnsafeBytes { file.write($0, at: file.headRoom) })
        return CacheEntry(status: 200, headers: headers, body: .file(FileRegion(file: file, offset: file.headRoom, count: size)),
                          requestTime: Date(timeIntervalSince1970: 10), responseTime: Date(timeIntervalSince1970: 11))
    }

    private static func contents(_ entry: CacheEntry?) -> [UInt8] {
        guard case .file(let region)? = entry?.body else { return [] }
        var bytes = [UInt8](repeating: 0, count: region.count)
        let n = bytes.withUnsafeMutableBytes { region.file.read(into: $0, at: region.offset) }
        return n == region.count ? bytes : []
    }

    private static func fileSize(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : -1
    }

    @Test func aSpoolFileIsNamedAsItsEntryAndReadsBackAfterARestart() async throws {
        let directory = temporaryDirectory()
        let entry = try Self.spooled(in: directory)
        let disk = try DiskTier(directory: directory, budget: 1 << 30)
        #expect(disk.write("big", entry))
        await disk.waitForWrites()
        let path = disk.path(for: DiskTier.name("big"))
        // The same file: its body where the transfer wrote it.
        #expect(Self.fileSize(path) == HeldAnswer.spoolHeadRoom + Self.size)
        #expect(sameBytes(Self.contents(await disk.read("big")), Self.body))
        let reopened = try DiskTier(directory: directory, budget: 1 << 30)
        let again = await reopened.read("big")
        #expect(sameBytes(Self.contents(again), Self.body) && again?.header("cache-control") == "max-age=60")
        #expect(reopened.corruptions == 0 && reopened.count == 1)
    }

    /// Stored twice (a second write of the same answer), the file is named once and copied
    /// the second time; a head too large for the room is copied too. Both read back whole.
    @Test func whatCannotBeNamedIsCopied() async throws {
        let directory = temporaryDirectory()
        let disk = try DiskTier(directory: directory, budget: 1 << 30)
        let entry = try Self.spooled(in: directory)
        disk.write("first", entry)
        disk.write("second", entry)
        let large = try Self.spooled(in: directory, headers: [("Cache-Control", "max-age=60"),
                                                            ("X-Large", String(repeating: "a", count: HeldAnswer.spoolHeadRoom))])
        disk.write("large", large)
        await disk.waitForWrites()
        #expect(Self.fileSize(disk.path(for: DiskTier.name("first"))) == HeldAnswer.spoolHeadRoom + Self.size)
        #expect(Self.fileSize(disk.path(for: DiskTier.name("second"))) < HeldAnswer.spoolHeadRoom + Self.size)
        let reopened = try DiskTier(directory: directory, budget: 1 << 30)
        for key in ["first", "second", "large"] {
            #expect(sameBytes(Self.contents(await reopened.read("\(key)")), Self.body), "\(key)")
        }
        #expect(reopened.corruptions == 0)
    }

    /// Padding is zeros: a head whose padding holds anything else is damage.
    @Test func paddingThatIsNotZeroIsDamage() async throws {
        let directory = temporaryDirectory()
        let disk = try DiskTier(directory: directory, budget: 1 << 30)
        disk.write("big", try Self.spooled(in: directory))
        await disk.waitForWrites()
        let path = disk.path(for: DiskTier.name("big"))
        let fd = open(path, O_WRONLY)
        var byte: UInt8 = 1
        #expect(pwrite(fd, &byte, 1, off_t(HeldAnswer.spoolHeadRoom - 1)) == 1)
        close(fd)
        let reopened = try DiskTier(directory: directory, budget: 1 << 30)
        #expect(await reopened.read("big") == nil)
        #expect(reopened.corruptions >= 1 && !FileManager.default.fileExists(atPath: path))
    }
}
