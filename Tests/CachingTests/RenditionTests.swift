import CLinux
import Foundation
import HTTPCore
import Bodies
import Synchronization
import Testing
import TestSupport
@testable import Caching

/// A route whose rendering costs keeps the body it rendered in the disk file beside the
/// entry; reading the entry back serves that body without rendering again, unless the route
/// renders another way now (another tag).
@Suite(.timeLimit(.minutes(1))) struct RenditionTests {
    /// A cache over `directory` with a fresh memory tier, whose render hook counts its calls
    /// and marks the body with `tag`, so a kept body and a new rendering are told apart.
    private final class Route: Sendable {
        let cache: Cache
        private let tally = Tally()
        var renders: Int { tally.count.load(ordering: .relaxed) }

        private final class Tally: Sendable { let count = Atomic<Int>(0) }

        init(directory: String, tag: String?) throws {
            let clock = ManualClock()
            let reuse = tag.map { tag in
                RenditionReuse(tag: tag) { entry, body, _ in
                    RenderedResponse(status: entry.status, body: body, fields: RenderedFields([("Content-Type", "text/plain")]),
                                     notModifiedFields: RenderedFields([]), etag: nil, modified: nil)
                }
            }
            let tally = self.tally
            cache = Cache(route: "test", policy: CachePolicy(defaultLifetime: 600, staleWhileRevalidate: 0, staleIfError: 0),
                          memory: MemoryTier(budget: 1 << 20), disk: try DiskTier(directory: directory, budget: 1 << 20),
                          fetcher: ScriptedUpstream(clock: clock), clock: clock, reuse: reuse) { _, entry in
                tally.count.add(1, ordering: .relaxed)
                let body = Array((tag ?? "plain").utf8) + [0x20] + (entry.body.inMemory ?? [])
                return reuse?.respond(entry, body, nil) ?? .plain(entry)
            }
        }

        func get() async throws -> CacheAnswer {
            let answer = try await cache.answer(Harness.request("k")).get()
            await cache.waitForDiskWrites()
            return answer
        }
    }

    @Test func aDiskReadServesTheKeptBodyWithoutRendering() async throws {
        let directory = temporaryDirectory()
        let first = try Route(directory: directory, tag: "json 1")
        #expect(try await first.get().value == "json 1 {\"v\":1}")
        #expect(first.renders == 1)

        let restarted = try Route(directory: directory, tag: "json 1")
        let answer = try await restarted.get()
        #expect(answer.status.detail == .disk)
        #expect(answer.value == "json 1 {\"v\":1}")
        #expect(restarted.renders == 0)
    }

    @Test func aBodyKeptUnderAnotherTagIsRenderedAgainAndKeptAnew() async throws {
        let directory = temporaryDirectory()
        _ = try await Route(directory: directory, tag: "json 1").get()

        let upgraded = try Route(directory: directory, tag: "json 2")
        let answer = try await upgraded.get()
        #expect(answer.status.detail == .disk)
        #expect(answer.value == "json 2 {\"v\":1}")
        #expect(upgraded.renders == 1)

        let again = try Route(directory: directory, tag: "json 2")
        #expect(try await again.get().value == "json 2 {\"v\":1}")
        #expect(again.renders == 0)
    }

    @Test func aRouteWithoutReuseKeepsNoBodyAndRendersEachRead() async throws {
        let directory = temporaryDirectory()
        _ = try await Route(directory: directory, tag: nil).get()
        let disk = try DiskTier(directory: directory, budget: 1 << 20)
        let kept = try #require(await disk.readKept(CacheKey(route: "test", resource: "k")))
        #expect(kept.rendition == nil)

        let restarted = try Route(directory: directory, tag: nil)
        #expect(try await restarted.get().value == "{\"v\":1}")
        #expect(restarted.renders == 1)
    }

    /// A kept body comes back with the ETag made when it was rendered (the body is not hashed
    /// again); one a header field could not carry, a body in the layout before this one, or
    /// no layout at all is a kept body not to reuse: the entry is rendered again.
    @Test func theKeptETagIsServedAgainUnlessAFieldCouldNotCarryIt() throws {
        let reuse = RenditionReuse(tag: "json 1") { entry, body, etag in
            RenderedResponse(status: entry.status, body: body, fields: RenderedFields([]), notModifiedFields: RenderedFields([]),
                             etag: etag ?? "\"made\"", modified: nil)
        }
        let made = reuse.respond(sample, Array("{}".utf8), nil)
        let kept = reuse.rendition(of: made)
        #expect(kept.tag != "json 1")
        let again = try #require(reuse.response(sample, kept: kept))
        #expect(again.etag == "\"made\"" && again.body == .bytes(Array("{}".utf8)))

        func keptBody(_ text: String) -> Rendition { Rendition(tag: kept.tag, body: Array(text.utf8)) }
        #expect(reuse.response(sample, kept: keptBody("\"kept\"\n{\"a\":1}"))?.etag == "\"kept\"")
        #expect(reuse.response(sample, kept: keptBody("\"kept\"\n{\"a\":1}"))?.body == .bytes(Array("{\"a\":1}".utf8)))
        #expect(reuse.response(sample, kept: keptBody("\n{}"))?.etag == "\"made\"")
        #expect(reuse.response(sample, kept: keptBody("\"a\r\nSet-Cookie: b\"\n{}")) == nil)
        #expect(reuse.response(sample, kept: keptBody("\"a\u{0}\"\n{}")) == nil)
        #expect(reuse.response(sample, kept: keptBody("{}")) == nil)
        #expect(reuse.response(sample, kept: Rendition(tag: "json 1", body: Array("{}".utf8))) == nil)
    }

    // MARK: The bytes

    private let sample = entry([("ETag", "\"a\"")], requested: 1, received: 2, body: "{\"raw\":true}")

    @Test func aRenditionRoundTripsBesideItsEntry() throws {
        let rendition = Rendition(tag: "weather json 1", body: Array("{\"rendered\":1}".utf8))
        let decoded = try #require(DiskEntryCodec.decodeKeyed(DiskEntryCodec.encode(key: "k", entry: sample, rendition: rendition)))
        #expect(decoded.entry == sample)
        #expect(decoded.rendition == rendition)
        #expect(decoded.key == "k")
    }

    /// A write waiting in line is charged `encodedSize`, and encoded only on the writer thread.
    @Test func theSizeAWaitingWriteIsChargedIsTheSizeItIsWrittenAs() {
        let tall = entry([("ETag", "\"a\""), ("Cache-Control", "max-age=60"), ("X-Empty", ""), ("X-Wide", "€ and 😀")],
                         requested: 1, received: 2, body: String(repeating: "b", count: 5000))
        let bare = CacheEntry(status: 204, headers: [], body: [], requestTime: Date(), responseTime: Date())
        for candidate in [sample, tall, bare] {
            for rendition in [nil, Rendition(tag: "", body: []), Rendition(tag: "weather json 1", body: Array("{\"é\":1}".utf8))] {
                for key in ["", "k", "weather 52.52,13.41 ünïcode"] {
                    #expect(DiskEntryCodec.encodedSize(key: key, entry: candidate, rendition: rendition)
                        == DiskEntryCodec.encode(key: key, entry: candidate, rendition: rendition).count)
                }
            }
        }
    }

    @Test func anyByteFlippedInTheRenditionIsAMiss() {
        let bytes = DiskEntryCodec.encode(key: "k", entry: sample, rendition: Rendition(tag: "t", body: Array("{}".utf8)))
        let renditionStart = bytes.count - (4 + 1 + 2)
        for offset in renditionStart..<bytes.count {
            var damaged = bytes
            damaged[offset] ^= 0x01
            #expect(DiskEntryCodec.decodeKeyed(damaged) == nil, "byte \(offset)")
        }
    }

    @Test func aTagLengthPastTheRenditionIsAMiss() {
        // A valid checksum over a rendition whose tag length runs past its end: as planted by hand.
        let framed = DiskEntryCodec.frame(key: Array("k".utf8), meta: Self.meta(of: sample), body: sample.body.inMemory ?? [],
                                          rendition: [0xFF, 0, 0, 0, 0x41])
        #expect(DiskEntryCodec.decodeKeyed(framed) == nil)
    }

    /// The metadata bytes of an entry, cut from its encoding.
    private static func meta(of entry: CacheEntry) -> [UInt8] {
        let bytes = DiskEntryCodec.encode(key: "k", entry: entry)
        return Array(bytes[(DiskEntryCodec.headerSize + 1)..<(bytes.count - entry.body.count)])
    }

    @Test func filesOfAnOlderFormatAreRemovedAtStartNotCountedDamaged() async throws {
        let directory = temporaryDirectory()
        let disk = try DiskTier(directory: directory, budget: 1 << 20)
        disk.write("old", sample)
        disk.write("new", sample)
        await disk.waitForWrites()
        let old = disk.path(for: DiskTier.name("old"))
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: old)))
        bytes[4] = 1  // version 1
        try Data(bytes).write(to: URL(fileURLWithPath: old))

        let reopened = try DiskTier(directory: directory, budget: 1 << 20)
        await reopened.waitForIndex()
        #expect(reopened.count == 1)
        #expect(!FileManager.default.fileExists(atPath: old))
        #expect(await reopened.read("old") == nil)
        #expect(await reopened.read("new") == sample)
        #expect(reopened.corruptions == 0)
    }

    // MARK: CRC-32C

    @Test func crc32cMatchesTheStandardCheckValue() {
        let check = Array("123456789".utf8)
        #expect(larder_crc32c(0, check, check.count) == 0xE306_9283)
        #expect(larder_crc32c_portable(0, check, check.count) == 0xE306_9283)
        #expect(larder_crc32c(0, [UInt8](), 0) == 0)
    }

    @Test func crc32cInHardwareAgreesWithTheTableAtEveryLengthAndAlignment() {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<300).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes.withUnsafeBytes { all in
            for start in 0..<9 {
                for length in 0..<(all.count - start) {
                    let run = UnsafeRawBufferPointer(rebasing: all[start..<(start + length)])
                    let fast = larder_crc32c(0, run.baseAddress, run.count)
                    #expect(fast == larder_crc32c_portable(0, run.baseAddress, run.count), "start \(start), length \(length)")
                }
            }
        }
        // Continuing from an earlier CRC is the CRC of the whole.
        let split = larder_crc32c(larder_crc32c(0, Array(bytes[..<100]), 100), Array(bytes[100...]), 200)
        #expect(split == larder_crc32c(0, bytes, bytes.count))
    }
}
