#if canImport(Glibc)
import Glibc
#endif
import Crypto
import Foundation
import HTTPCore
import Bodies
import Testing
import TestSupport
@testable import Caching

/// The disk is outside input: whatever bytes, file types or folder layout it holds, a read is
/// an entry or a miss, never a trap, a hang, a followed symlink or wrong bytes.
@Suite(.timeLimit(.minutes(1))) struct DiskHostileInputTests {
    private let sample = entry([("ETag", "\"a\""), ("Cache-Control", "max-age=60")], requested: 10, received: 11.5,
                               body: "{\"temperature\":3.2}")

    /// Writes `sample` under `key` and returns the tier and the entry's path.
    private func stored(_ key: CacheKey = "key", directory: String = temporaryDirectory()) async throws -> (DiskTier, String) {
        let disk = try DiskTier(directory: directory, budget: 1 << 20)
        disk.write(key, sample)
        await disk.waitForWrites()
        return (disk, disk.path(for: DiskTier.name(key)))
    }

    @Test func aHugeBodyLengthIsAMissNotATrap() async throws {
        let (disk, path) = try await stored()
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        bytes.replaceSubrange(16..<24, with: [0xF0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        #expect(await disk.read("key") == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test(arguments: [(8, UInt32.max), (12, UInt32.max), (8, 0x7FFF_FFFF), (12, 1)])
    func anyLengthFieldValueIsAMissNotATrap(offset: Int, value: UInt32) {
        var bytes = DiskEntryCodec.encode(key: "key", entry: sample)
        withUnsafeBytes(of: value.littleEndian) { bytes.replaceSubrange(offset..<(offset + 4), with: $0) }
        #expect(DiskEntryCodec.decode(bytes, key: "key") == nil)
    }

    /// Bytes with a valid checksum whose metadata is out of range: written by hand, as a
    /// damaged or planted file could be.
    @Test(arguments: [1e300, -1e300, Double.nan, Double.infinity, -1])
    func checksumValidButImpossibleTimesAreAMiss(_ time: Double) {
        let odd = CacheEntry(status: 200, headers: [], body: Array("{}".utf8), requestTime: Date(timeIntervalSince1970: time),
                             responseTime: Date(timeIntervalSince1970: 5))
        #expect(DiskEntryCodec.decode(DiskEntryCodec.encode(key: "k", entry: odd), key: "k") == nil)
        let late = CacheEntry(status: 200, headers: [], body: [], requestTime: Date(timeIntervalSince1970: 5),
                              responseTime: Date(timeIntervalSince1970: time))
        #expect(DiskEntryCodec.decode(DiskEntryCodec.encode(key: "k", entry: late), key: "k") == nil)
    }

    @Test(arguments: [("X-Split", "a\r\nSet-Cookie: x=1"), ("Bad Name", "1"), ("X-Nul", "a\u{0}b"), ("", "empty name")])
    func checksumValidButMalformedFieldsAreAMiss(name: String, value: String) {
        let odd = CacheEntry(status: 200, headers: [(name, value)], body: [], requestTime: t(0), responseTime: t(1))
        #expect(DiskEntryCodec.decode(DiskEntryCodec.encode(key: "k", entry: odd), key: "k") == nil)
    }

    /// Planted by hand with a valid checksum: fields that would frame the answer anew on its
    /// way out (two pipelined requests came back as three responses), or a status that is no
    /// final answer. Each is a miss, as a damaged file is.
    @Test(arguments: [[("Transfer-Encoding", "chunked")], [("Content-Length", "5"), ("content-length", "7")], [("Content-Length", "5x")],
                      [("Connection", "close")], [("Keep-Alive", "timeout=5")], [("Upgrade", "h2c")], [("Trailer", "X")], [("TE", "trailers")]])
    func checksumValidButFramingFieldsAreAMiss(_ fields: [(String, String)]) {
        let odd = CacheEntry(status: 200, headers: HTTPHeaders(fields), body: Array("hello".utf8), requestTime: t(0), responseTime: t(1))
        #expect(DiskEntryCodec.decode(DiskEntryCodec.encode(key: "k", entry: odd), key: "k") == nil)
    }

    @Test(arguments: [100, 101, 199, 600, 999])
    func checksumValidButNoFinalStatusIsAMiss(_ status: Int) {
        let odd = CacheEntry(status: status, headers: [], body: [], requestTime: t(0), responseTime: t(1))
        #expect(DiskEntryCodec.decode(DiskEntryCodec.encode(key: "k", entry: odd), key: "k") == nil)
    }

    /// Planted with a valid checksum: what Larder never stores. A 304 would tell a client with
    /// no copy that its copy is current, a 206 would go out without its `Content-Range`, and a
    /// `Set-Cookie` would reach every client (of every replica, from Redis). Each is a miss.
    @Test(arguments: [(304, [("ETag", "\"a\"")]), (206, [("Content-Range", "bytes 0-4/10")]),
                      (200, [("Set-Cookie", "sid=planted")]), (200, [("set-cookie", "sid=planted"), ("Cache-Control", "max-age=60")])])
    func checksumValidButNeverStoredAnswersAreAMiss(status: Int, fields: [(String, String)]) async throws {
        let odd = CacheEntry(status: status, headers: HTTPHeaders(fields), body: Array("hello".utf8), requestTime: t(0), responseTime: t(1))
        #expect(DiskEntryCodec.decode(DiskEntryCodec.encode(key: "k", entry: odd), key: "k") == nil)
        // Planted in place of a real file, it is a miss, and removed.
        let (disk, path) = try await stored()
        try Data(DiskEntryCodec.encode(key: "key", entry: odd)).write(to: URL(fileURLWithPath: path))
        #expect(await disk.read("key") == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func oneContentLengthOfDigitsIsKept() {
        let fine = CacheEntry(status: 200, headers: [("Content-Length", "5")], body: Array("hello".utf8), requestTime: t(0), responseTime: t(1))
        #expect(DiskEntryCodec.decode(DiskEntryCodec.encode(key: "k", entry: fine), key: "k") == fine)
    }

    @Test func aStatusOutsideHTTPIsAMiss() {
        let odd = CacheEntry(status: 7, headers: [], body: [], requestTime: t(0), responseTime: t(1))
        #expect(DiskEntryCodec.decode(DiskEntryCodec.encode(key: "k", entry: odd), key: "k") == nil)
    }

    @Test func aFIFOInPlaceOfAnEntryIsAMissWithoutWaiting() async throws {
        let (disk, path) = try await stored()
        unlink(path)
        #expect(mkfifo(path, 0o644) == 0)
        let started = ContinuousClock.now
        #expect(await disk.read("key") == nil)
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func aSymlinkInPlaceOfAnEntryIsNotFollowed() async throws {
        let (disk, path) = try await stored()
        let elsewhere = temporaryDirectory() + "/secret"
        try Data(DiskEntryCodec.encode(key: "key", entry: sample)).write(to: URL(fileURLWithPath: elsewhere))
        unlink(path)
        #expect(symlink(elsewhere, path) == 0)
        #expect(await disk.read("key") == nil)
        #expect(FileManager.default.fileExists(atPath: elsewhere))
    }

    @Test func aSymlinkedSubfolderIsReplacedNotFollowedOnWrite() async throws {
        let directory = temporaryDirectory()
        let outside = temporaryDirectory()
        let folder = directory + "/" + DiskTier.name("key").hex.prefix(2)
        #expect(symlink(outside, folder) == 0)
        let (disk, path) = try await stored(directory: directory)
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside).isEmpty)
        var info = stat()
        #expect(lstat(folder, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR)
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(await disk.read("key") == sample)
    }

    @Test func plantedNonFilesAreNotIndexedAtStart() async throws {
        let directory = temporaryDirectory()
        let (_, path) = try await stored(directory: directory)
        let other = DiskTier.name("other").hex
        try FileManager.default.createDirectory(atPath: directory + "/" + other.prefix(2), withIntermediateDirectories: true)
        #expect(mkfifo(directory + "/" + other.prefix(2) + "/" + other, 0o644) == 0)
        let reopened = try DiskTier(directory: directory, budget: 1 << 20)
        await reopened.waitForIndex()
        #expect(reopened.count == 1)
        #expect(FileManager.default.fileExists(atPath: path))
    }

    /// Deleted while running, the directory takes its entries with it: they are forgotten,
    /// their kept files closed (deleted but open, they would still fill the file system), and
    /// the directory made again is used.
    @Test func aCacheDirectoryDeletedWhileRunningIsUsedAgain() async throws {
        let directory = temporaryDirectory()
        let (disk, _) = try await stored(directory: directory)
        #expect(await disk.read("key") == sample)  // its file is now kept open
        try FileManager.default.removeItem(atPath: directory)
        #expect(!FileManager.default.fileExists(atPath: directory))
        disk.write("again", sample)
        await disk.waitForWrites()
        #expect(await disk.read("again") == sample)
        #expect(disk.isWritable)
        #expect(FileManager.default.fileExists(atPath: directory + "/tmp"))
        #expect(disk.count == 1 && disk.bytes == DiskTier.charge(DiskEntryCodec.encodedSize(key: ("again" as CacheKey).text, entry: sample)))
        #expect(await disk.read("key") == nil)
        let held = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)
        }
        #expect(!held.contains { $0.hasPrefix(directory) && $0.hasSuffix("(deleted)") }, "\(held)")
    }

    @Test func temporaryNamesNeverRepeatInAProcessOrBetweenTwo() {
        let one = TemporaryNames(), other = TemporaryNames()
        let names = (0..<1000).map { _ in one.next() } + (0..<1000).map { _ in other.next() }
        #expect(Set(names).count == 2000)
        #expect(names.allSatisfy { !$0.contains("/") && !$0.hasPrefix(".") })
    }

    @Test func theWriteQueueIsBoundedInBytes() async throws {
        let size = DiskEntryCodec.encodedSize(key: CacheKey(route: "test", resource: "k00").text, entry: sample)
        let disk = try DiskTier(directory: temporaryDirectory(), budget: 1 << 24, writeQueueLimit: size * 2)
        // Faster than writes with fsync can finish: most of these find the queue full.
        for i in 0..<200 { disk.write(CacheKey(route: "test", resource: String(format: "k%02d", i % 100)), sample) }
        await disk.waitForWrites()
        #expect(disk.skippedWrites > 0)
        #expect(disk.count + disk.skippedWrites >= 100)
        #expect(disk.count <= 100)
    }

    @Test func theIndexChargesAtLeastABlockPerEntry() async throws {
        let disk = try DiskTier(directory: temporaryDirectory(), budget: DiskTier.blockSize * 4)
        for i in 0..<10 { disk.write("k\(i)", sample) }
        await disk.waitForWrites()
        #expect(disk.count == 4)
        #expect(disk.bytes == DiskTier.blockSize * 4)
    }

    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func aFullDiskKeepsServingAndSaysSo() async throws {
        let directory = temporaryDirectory()
        try #require(mountTmpfs(at: directory, size: "64k"))
        defer { unmountTmpfs(at: directory) }
        let disk = try DiskTier(directory: directory, budget: 1 << 24)
        let big = entry([], body: String(repeating: "x", count: 100_000))
        disk.write("big", big)
        await disk.waitForWrites()
        #expect(disk.isFull)
        #expect(disk.failedWrites == 1)
        #expect(await disk.read("big") == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory + "/tmp").isEmpty)
        disk.write("small", sample)
        await disk.waitForWrites()
        #expect(!disk.isFull)
        #expect(await disk.read("small") == sample)
    }

    /// RFC 9111 §4: a cache uses the most recent response it has; the one the failed write
    /// was to replace is older than what was answered since.
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func aNewerAnswerThatCannotBeWrittenTakesTheOlderFileWithIt() async throws {
        let directory = temporaryDirectory()
        try #require(mountTmpfs(at: directory, size: "64k"))
        defer { unmountTmpfs(at: directory) }
        let disk = try DiskTier(directory: directory, budget: 1 << 24)
        disk.write("key", sample)
        disk.write("kept", sample)
        await disk.waitForWrites()
        let older = disk.path(for: DiskTier.name("key"))
        #expect(await disk.read("key") == sample)
        disk.write("key", entry([], body: String(repeating: "x", count: 100_000)))
        await disk.waitForWrites()
        #expect(disk.failedWrites == 1)
        #expect(await disk.read("key") == nil)
        #expect(!FileManager.default.fileExists(atPath: older))
        #expect(await disk.read("kept") == sample)
    }
}
