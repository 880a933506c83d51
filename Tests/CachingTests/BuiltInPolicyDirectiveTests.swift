import Foundation
import Synchronization
import Testing
import TestSupport
@testable import Caching
import CacheVocabulary

/// What a request may ask of the built-in policy, what the upstream allows, and the
/// refresh limit.
extension BuiltInPolicyTests {
    // MARK: Request directives

    @Test(arguments: ["no-cache", "max-age=0"])
    func revalidateFirstDirectivesGoToTheUpstream(_ directive: String) async throws {
        let h = try Harness()
        _ = await h.get()
        h.clock.advance(by: 1)
        let answer = try #require(await h.get(directive).answer)
        #expect(h.fetcher.calls == 2)
        #expect(answer.status.forward == .request)
    }

    @Test func pragmaNoCacheWithoutCacheControlRevalidates() async throws {
        let h = try Harness()
        _ = await h.get()
        _ = await h.cache.answer(Harness.request("k", RequestDirectives(cacheControl: [], pragma: ["no-cache"])))
        #expect(h.fetcher.calls == 2)
        _ = await h.cache.answer(Harness.request("k", RequestDirectives(cacheControl: ["max-stale"], pragma: ["no-cache"])))
        #expect(h.fetcher.calls == 2)  // Cache-Control present: Pragma is ignored (RFC 9111 §5.4)
    }

    @Test func maxAgeLimitsTheAgeAccepted() async throws {
        let h = try Harness()
        _ = await h.get()
        h.clock.advance(by: 20)
        _ = await h.get("max-age=30")
        #expect(h.fetcher.calls == 1)
        _ = await h.get("max-age=10")
        #expect(h.fetcher.calls == 2)
    }

    @Test func minFreshAsksForRemainingFreshness() async throws {
        let h = try Harness()
        _ = await h.get()
        h.clock.advance(by: 40)  // 20 s of freshness left
        _ = await h.get("min-fresh=10")
        #expect(h.fetcher.calls == 1)
        _ = await h.get("min-fresh=30")
        #expect(h.fetcher.calls == 2)
    }

    @Test func maxStaleAcceptsStaleAnswers() async throws {
        let h = try Harness()
        _ = await h.get()
        h.clock.advance(by: 60 + 50)  // 50 s stale
        let anyStale = try #require(await h.get("max-stale").answer)
        #expect(anyStale.status.hit)
        #expect(anyStale.status.ttl == -50)
        _ = await h.get("max-stale=100")
        #expect(h.fetcher.calls == 1)
        _ = await h.get("max-stale=10")
        #expect(h.fetcher.calls == 2)
    }

    @Test func mustRevalidateOverridesMaxStaleAndStaleIfError() async throws {
        let h = try Harness(policy: CachePolicy(defaultLifetime: 600, staleWhileRevalidate: 60, staleIfError: 3600))
        h.fetcher.change { $0.headers = [("Cache-Control", "max-age=10, must-revalidate")] }
        _ = await h.get()
        h.clock.advance(by: 20)
        h.fetcher.change { $0.error = .unreachable }
        #expect(await h.get("max-stale").failure != nil)
        #expect(h.fetcher.calls == 2)
    }

    @Test func onlyIfCachedIsNotCachedWhenNothingSuitableIsStored() async throws {
        let h = try Harness()
        #expect(await h.get("only-if-cached").failure == .notCached)
        #expect(h.fetcher.calls == 0)
        _ = await h.get()
        #expect(await h.get("only-if-cached").answer?.status.hit == true)
        h.clock.advance(by: 100)
        #expect(await h.get("only-if-cached").failure == .notCached)
        #expect(h.fetcher.calls == 1)
    }

    @Test func noStoreStoresNothingFetchedButMayUseWhatIsStored() async throws {
        let h = try Harness()
        let miss = try #require(await h.get("no-store").answer)
        #expect(!miss.status.stored)
        #expect(h.cache.memory.count == 0)
        _ = await h.get()
        let hit = try #require(await h.get("no-store").answer)
        #expect(hit.status.hit)
        #expect(h.fetcher.calls == 2)
    }

    // MARK: What the upstream allows

    @Test func upstreamNoStoreIsNotStored() async throws {
        let h = try Harness()
        h.fetcher.change { $0.headers = [("Cache-Control", "no-store")] }
        let answer = try #require(await h.get().answer)
        #expect(!answer.status.stored)
        _ = await h.get()
        #expect(h.fetcher.calls == 2)
    }

    @Test func privateIsStoredOnlyWhereThePolicyAllows() async throws {
        let shared = try Harness(policy: CachePolicy(defaultLifetime: 60, storage: .decodedAnswers(storesPrivate: false)))
        shared.fetcher.change { $0.headers = [("Cache-Control", "private, max-age=60")] }
        #expect(try #require(await shared.get().answer).status.stored == false)
        let perAccount = try Harness(policy: CachePolicy(defaultLifetime: 60, storage: .decodedAnswers(storesPrivate: true)))
        perAccount.fetcher.change { $0.headers = [("Cache-Control", "private, max-age=60")] }
        #expect(try #require(await perAccount.get().answer).status.stored)
    }

    @Test func theConfiguredLifetimeAppliesWhenTheUpstreamGivesNone() async throws {
        let h = try Harness(policy: CachePolicy(defaultLifetime: 600))
        h.fetcher.change { $0.headers = [] }
        let answer = try #require(await h.get().answer)
        #expect(answer.lifetime == 600)
        h.clock.advance(by: 599)
        _ = await h.get()
        #expect(h.fetcher.calls == 1)
    }

    @Test func ageCountsTheUpstreamsAgeAndDate() async throws {
        let h = try Harness()
        h.fetcher.change { $0.headers = [("Cache-Control", "max-age=60"), ("Age", "15")] }
        let answer = try #require(await h.get().answer)
        #expect(answer.age == 15)
        h.clock.advance(by: 5)
        let later = try #require(await h.get().answer)
        #expect(later.age == 20)
        #expect(later.status.ttl == 40)
    }

    // MARK: Refresh limit

    @Test func oneClientForcedRefreshPerKeyPerInterval() async throws {
        let h = try Harness(policy: CachePolicy(defaultLifetime: 600, refreshMinInterval: 5))
        _ = await h.get()
        #expect(try #require(await h.get("no-cache").answer).status.forward == .request)
        h.clock.advance(by: 4.9)
        let limited = try #require(await h.get("max-age=0").answer)
        #expect(limited.status.description == "larder; hit; ttl=56; detail=refresh-limited")
        #expect(h.cache.answerFromMemory(Harness.request("k", RequestDirectives(CacheControl("no-cache"))))?.status.detail == .refreshLimited)
        #expect(h.fetcher.calls == 2)
        h.clock.advance(by: 0.1)
        #expect(try #require(await h.get("no-cache").answer).status.forward == .request)
        #expect(h.fetcher.calls == 3)
    }

    @Test func theUpstreamsOwnNoCacheAndStaleAnswersAreNeverLimited() async throws {
        let h = try Harness(policy: CachePolicy(defaultLifetime: 600, refreshMinInterval: 5))
        h.fetcher.change { $0.headers = [("Cache-Control", "no-cache, max-age=60"), ("ETag", "\"v1\"")] }
        for _ in 0..<3 { _ = await h.get("no-cache") }
        #expect(h.fetcher.calls == 3)
        let stale = try Harness(policy: CachePolicy(defaultLifetime: 600, refreshMinInterval: 5))
        _ = await stale.get()
        _ = await stale.get("no-cache")
        stale.clock.advance(by: 61)  // stale now: going to the upstream is not the client's doing
        #expect(try #require(await stale.get("no-cache").answer).status.forward == .stale)
        #expect(stale.fetcher.calls == 3)
    }
}
