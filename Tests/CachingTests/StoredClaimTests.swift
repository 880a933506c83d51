import Foundation
import HTTPCore
import Bodies
import Testing
import TestSupport
@testable import Caching

/// `Cache-Status` says `stored` only when a tier took the answer: the memory tier kept it,
/// or the disk tier's write queue accepted it.
@Suite(.timeLimit(.minutes(1))) struct StoredClaimTests {
    private func ask(_ cache: Cache) async throws -> CacheAnswer {
        let request = CacheRequest(method: .get, resource: "/big", url: "http://origin.test/big", headers: HTTPHeaders(), body: nil)
        switch await cache.answer(request) {
        case .success(let answer): return answer
        case .failure(let failure): throw failure
        }
    }

    private func cache(queue: Int) throws -> (Cache, DiskTier, ScriptedUpstream) {
        let clock = ManualClock()
        let origin = ScriptedUpstream(clock: clock)
        let disk = try DiskTier(directory: temporaryDirectory(), budget: 1 << 24, writeQueueLimit: queue)
        // A memory tier smaller than the answer: only the disk can keep it.
        let cache = Cache(route: "http://origin.test", policy: .sharedCache, memory: MemoryTier(budget: 4096), disk: disk,
                          fetcher: origin, clock: clock) { _, entry in .plain(entry) }
        origin.reply(.init(status: 200, headers: [("Cache-Control", "max-age=60")], body: String(repeating: "x", count: 64 << 10)))
        return (cache, disk, origin)
    }

    @Test func anAnswerNoTierTookIsNotCalledStored() async throws {
        let (cache, disk, origin) = try cache(queue: 16 << 10)
        let first = try await ask(cache)
        #expect(first.status.description == "larder; fwd=miss; fwd-status=200")
        #expect(disk.skippedWrites == 1)
        _ = try await ask(cache)
        #expect(origin.calls == 2, "what was not stored was not served again")
    }

    @Test func anAnswerTheDiskTookIsStoredAndServedAgain() async throws {
        let (cache, disk, origin) = try cache(queue: 1 << 20)
        let first = try await ask(cache)
        #expect(first.status.description == "larder; fwd=miss; fwd-status=200; stored")
        await disk.waitForWrites()
        let second = try await ask(cache)
        #expect(second.status.hit && origin.calls == 1)
    }

    /// Without a disk tier, an answer the memory tier's admission turned away is relayed, is
    /// not called stored, and says why; what was asked more stays.
    @Test func anAnswerNotAdmittedSaysSo() async throws {
        let clock = ManualClock()
        let origin = ScriptedUpstream(clock: clock)
        let memory = MemoryTier(budget: 64 << 10, seed: 5)
        let cache = Cache(route: "http://origin.test", policy: .sharedCache, memory: memory, disk: nil,
                          fetcher: origin, clock: clock) { _, entry in .plain(entry) }
        origin.reply { sent in
            ScriptedUpstream.Reply(body: String(repeating: "x", count: sent.url.hasSuffix("/big") ? 40 << 10 : 100))
        }
        func ask(_ path: String) async throws -> CacheAnswer {
            let request = CacheRequest(method: .get, resource: path, url: "http://origin.test" + path, headers: HTTPHeaders(), body: nil)
            switch await cache.answer(request) {
            case .success(let answer): return answer
            case .failure(let failure): throw failure
            }
        }
        for _ in 0..<3 { for n in 0..<20 { _ = try await ask("/small-\(n)") } }
        #expect(origin.calls == 20)
        let big = try await ask("/big")
        #expect(big.status.description == "larder; fwd=miss; fwd-status=200; detail=not-admitted")
        #expect(memory.rejections == 1)
        _ = try await ask("/big")
        #expect(origin.calls == 22, "what was not stored was asked for again")
        for n in 0..<20 { #expect(try await ask("/small-\(n)").status.hit) }
    }
}
