#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPCore
import Bodies
import HTTPServer
import Synchronization
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// Spool files count against the disk budget: past it, and for an answer over
/// `max-object-size`, Larder reads the origin at its client's pace and frees what the
/// client has been sent, so the cache directory holds at most the budget and a few MiB per
/// such answer, however slowly its clients read; they still get every byte.
@Suite(.timeLimit(.minutes(2)))
struct SpoolBudgetTests {
    static let size = 30 << 20
    static let body = patternBytes(size)
    /// What an answer read at its client's pace may hold beyond the budget: its window and
    /// one step not yet freed behind the client, and one more step of the room taken.
    static let margin = BodyStream.pacedWindow + 2 * SpoolRoom.step

    static func route(_ url: String, maxObjectSize: Int? = nil, into settings: inout ServeSettings) {
        var route = RouteMount("/b=\(url)")!
        route.caching.timeout = .seconds(30)
        route.caching.maxObjectSize = maxObjectSize
        settings.routes = [route]
    }

    /// Bytes the file system holds for the cache directory: its files, and the unnamed or
    /// removed files this process (the Larder under test) holds open there, each once.
    static func bytesOnDisk(_ directory: String) -> Int {
        let root = URL(fileURLWithPath: directory).resolvingSymlinksInPath().path
        var seen = Set<[UInt64]>(), total = 0
        func count(_ path: String, follow: Bool) {
            var info = stat()
            guard (follow ? stat(path, &info) : lstat(path, &info)) == 0, info.st_mode & S_IFMT == S_IFREG,
                  seen.insert([UInt64(info.st_dev), UInt64(info.st_ino)]).inserted else { return }
            total += Int(info.st_blocks) * 512
        }
        for case let name as String in FileManager.default.enumerator(atPath: root) ?? FileManager.DirectoryEnumerator() {
            count(root + "/" + name, follow: false)
        }
        for fd in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + fd),
                  target.hasPrefix(root + "/") else { continue }
            count("/proc/self/fd/" + fd, follow: true)
        }
        return total
    }

    /// The most `bytesOnDisk` reads while `work` runs, sampled every 10 ms.
    static func peakOnDisk(_ directory: String, during work: () async throws -> Void) async rethrows -> Int {
        let peak = Atomic<Int>(0), done = Atomic<Bool>(false)
        let sampler = Task.detached {
            while !done.load(ordering: .relaxed) {
                let now = bytesOnDisk(directory)
                if now > peak.load(ordering: .relaxed) { peak.store(now, ordering: .relaxed) }
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        defer { done.store(true, ordering: .relaxed) }
        try await work()
        done.store(true, ordering: .relaxed)
        await sampler.value
        return max(peak.load(ordering: .relaxed), bytesOnDisk(directory))
    }

    static func bigOrigin() throws -> TestOrigin {
        try TestOrigin { _ in HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=600")]), body: Self.body) }
    }

    /// Two clients of two distinct 30 MiB misses with a 32 MiB disk budget, reading nothing for
    /// a while and then all: the first answer takes the room, the second goes at its client's
    /// pace, and the directory never holds more than the budget and one answer's margin.
    /// Before, both spool files grew to 30 MiB at once.
    @Test func twoSlowClientsOfLargeMissesStayWithinTheDiskBudget() async throws {
        let origin = try Self.bigOrigin()
        try await withLarder({
            Self.route(origin.url, into: &$0)
            $0.diskLimit = 32 << 20
        }) { larder in
            let clients = try (0..<2).map { _ in try TestClient(port: larder.port) }
            let peak = try await Self.peakOnDisk(larder.cacheDirectory) {
                try clients[0].send("GET /b/one HTTP/1.1\r\nHost: larder\r\n\r\n")
                try clients[1].send("GET /b/two HTTP/1.1\r\nHost: larder\r\n\r\n")
                // Neither reads: what Larder takes from the origin meanwhile waits on disk.
                for _ in 0..<100 where origin.requests.count < 2 { try await Task.sleep(for: .milliseconds(50)) }
                try await Task.sleep(for: .seconds(2))
                async let first = clients[0].readResponse()
                async let second = clients[1].readResponse()
                let (one, two) = try await (first, second)
                #expect(one.status == 200 && sameBytes(one.body, Self.body))
                #expect(two.status == 200 && sameBytes(two.body, Self.body))
            }
            #expect(peak <= (32 << 20) + Self.margin, "\(peak >> 20) MiB on disk at most")
            await larder.service.waitForDiskWrites()
            #expect(Self.bytesOnDisk(larder.cacheDirectory) <= 32 << 20)
        }
        await origin.stop()
    }

    /// Eight concurrent distinct misses of 30 MiB against a 16 MiB budget, none read for a
    /// second: the room runs out within the first few MiB of each, none waits on another for
    /// good, the directory holds the budget and a margin per answer at most, and every client
    /// then gets every byte.
    @Test func manyConcurrentLargeMissesShareTheBudgetAndAllArriveWhole() async throws {
        let origin = try Self.bigOrigin()
        let count = 8
        try await withLarder({
            Self.route(origin.url, into: &$0)
            $0.diskLimit = 16 << 20
        }) { larder in
            let clients = try (0..<count).map { _ in try TestClient(port: larder.port, timeout: .seconds(60)) }
            let peak = try await Self.peakOnDisk(larder.cacheDirectory) {
                for (index, client) in clients.enumerated() { try client.send("GET /b/many\(index) HTTP/1.1\r\nHost: larder\r\n\r\n") }
                for _ in 0..<100 where origin.requests.count < count { try await Task.sleep(for: .milliseconds(50)) }
                try await Task.sleep(for: .seconds(1))
                try await withThrowingTaskGroup(of: Bool.self) { group in
                    for client in clients {
                        group.addTask {
                            let response = try await client.readResponse()
                            return response.status == 200 && sameBytes(response.body, Self.body)
                        }
                    }
                    for try await whole in group { #expect(whole) }
                }
            }
            #expect(peak <= (16 << 20) + count * Self.margin, "\(peak >> 20) MiB on disk at most")
        }
        await origin.stop()
    }

    /// An answer over `max-object-size` is never stored, so nothing but its client reads it:
    /// a client that reads nothing for a while holds a window of it on disk, not all of it,
    /// and then gets every byte.
    @Test func anAnswerOverTheLargestStoredGoesAtItsClientsPace() async throws {
        let origin = try Self.bigOrigin()
        try await withLarder({ Self.route(origin.url, maxObjectSize: 4 << 20, into: &$0) }) { larder in
            let client = try TestClient(port: larder.port)
            let peak = try await Self.peakOnDisk(larder.cacheDirectory) {
                try client.send("GET /b/huge HTTP/1.1\r\nHost: larder\r\n\r\n")
                try await Task.sleep(for: .seconds(2))
                let response = try await client.readResponse()
                #expect(response.status == 200 && sameBytes(response.body, Self.body))
                #expect(response.header("Cache-Status")?.contains("detail=too-large") == true)
            }
            #expect(peak <= Self.margin, "\(peak >> 20) MiB on disk at most")
        }
        await origin.stop()
    }

    /// An answer that took room until the budget ran out goes at its client's pace from
    /// there: the memory tier lets go of it, so a request arriving then is a miss of its own
    /// with every byte (not a read along a file whose start was freed), and the first client,
    /// reading on, gets every byte too.
    @Test func aRequestArrivingAfterAnAnswerWasPacedFetchesItsOwn() async throws {
        let origin = try Self.bigOrigin()
        try await withLarder({
            Self.route(origin.url, into: &$0)
            $0.diskLimit = 12 << 20
        }) { larder in
            let first = try TestClient(port: larder.port)
            try first.send("GET /b/one HTTP/1.1\r\nHost: larder\r\n\r\n")
            _ = try await StreamingTests.read(first, bodyBytes: 1)
            try await Task.sleep(for: .seconds(1))
            let second = try await larder.get("/b/one")
            #expect(second.status == 200 && sameBytes(second.body, Self.body))
            #expect(second.header("Cache-Status")?.contains("fwd=miss") == true, "\(second.header("Cache-Status") ?? "")")
            let whole = try await first.readResponse()
            #expect(whole.status == 200 && sameBytes(whole.body, Self.body))
        }
        await origin.stop()
    }

    /// Two requests for one answer read at its client's pace, pipelined on one connection:
    /// both answered whole, one after the other (the second's place in the stream never holds
    /// the first's back for good).
    @Test func pipelinedRequestsForAPacedAnswerBothArriveWhole() async throws {
        let origin = try Self.bigOrigin()
        try await withLarder({ Self.route(origin.url, maxObjectSize: 4 << 20, into: &$0) }) { larder in
            let client = try TestClient(port: larder.port, timeout: .seconds(60))
            try client.send("GET /b/twice HTTP/1.1\r\nHost: larder\r\n\r\nGET /b/twice HTTP/1.1\r\nHost: larder\r\n\r\n")
            for _ in 0..<2 {
                let response = try await client.readResponse()
                #expect(response.status == 200 && sameBytes(response.body, Self.body))
            }
        }
        await origin.stop()
    }

    /// A client of an answer read at its pace that reads a little and vanishes: the transfer
    /// stops (the origin sees its connection closed), and the file goes.
    @Test func aClientVanishingMidBodyStopsItsPacedTransfer() async throws {
        let origin = try UnstoredRelayTests.Origin(length: 256 << 20)
        defer { origin.server.stop() }
        try await withLarder({ Self.route(origin.url, maxObjectSize: 4 << 20, into: &$0) }) { larder in
            do {
                let client = try TestClient(port: larder.port)
                try client.send("GET /b/gone HTTP/1.1\r\nHost: larder\r\n\r\n")
                _ = try await StreamingTests.read(client, bodyBytes: 1 << 20)
                try await Task.sleep(for: .seconds(1))
                // Held to its client's pace, the origin has sent little more than the window
                // (and what the sockets between hold); at its pace, a second would be 64 MiB.
                #expect(origin.sent < 32 << 20, "\(origin.sent >> 20) MiB sent")
            }  // the client leaves
            #expect(try await origin.waitForCut())
            var left = Self.bytesOnDisk(larder.cacheDirectory)
            for _ in 0..<100 where left > 0 {
                try await Task.sleep(for: .milliseconds(50))
                left = Self.bytesOnDisk(larder.cacheDirectory)
            }
            #expect(left == 0, "\(left) bytes left")
        }
    }
}
