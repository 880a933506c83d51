import Crypto
import Foundation
import HTTPCore
import Bodies
import Testing
import TestSupport
@testable import Caching

/// Keys of different routes, resources and variants never meet, whatever the parts spell.
@Suite struct CacheKeyTests {
    @Test func theSameResourceInTwoRoutesIsTwoKeys() {
        #expect(CacheKey(route: "weather", resource: "52.52,13.41") != CacheKey(route: "http://o", resource: "52.52,13.41"))
    }

    @Test func movingTheBoundaryBetweenRouteAndResourceMakesAnotherKey() {
        #expect(CacheKey(route: "weather", resource: "x") != CacheKey(route: "weathe", resource: "rx"))
        #expect(CacheKey(route: "a", resource: "\u{0}b") != CacheKey(route: "a\u{0}", resource: "b"))
    }

    @Test func aVariantKnowsItsPrimaryKeyAndEveryKeyItsRoute() {
        let primary = CacheKey(route: "http://o", resource: "/page\u{0}x")
        let variant = primary.variant(generation: "g1", selector: "accept-language=de")
        #expect(!primary.isVariant && variant.isVariant)
        #expect(variant.primary == primary)
        #expect(primary.primary == primary)
        #expect(variant.route == "http://o")
        #expect(CacheTags.of(variant, CacheEntry(status: 200, headers: [("Surrogate-Key", " a  b "), ("cache-tag", "c, a,,")], body: [],
                                                 requestTime: Date(), responseTime: Date())) == ["http://o", "a", "b", "c"])
    }

    /// Keys are held in two parts, but stored and read back as one text: the two must agree.
    @Test func aKeyReadBackFromItsTextIsTheSameKey() {
        let primary = CacheKey(route: "http://o", resource: "/page%x")
        let variant = primary.variant(generation: "g1", selector: "accept=json")
        for key in [primary, variant, CacheKey(route: "weather", resource: "")] {
            let read = CacheKey(stored: key.text)
            #expect(read == key && read.hashValue == key.hashValue && read.text == key.text)
            #expect(read.isVariant == key.isVariant && read.primary == key.primary)
        }
        #expect(primary.text == "http://o\u{0}/page%25x" && variant.text == "http://o\u{0}/page%25x\u{0}g1\u{0}accept=json")
        // A text with no separator (only ever found in storage) keeps its exact text, also as a variant's base.
        let bare = CacheKey(stored: "bare")
        #expect(bare.text == "bare" && bare != CacheKey(stored: "bare\u{0}") && bare.route == "bare")
        #expect(bare.variant(generation: "g", selector: "s").text == "bare\u{0}g\u{0}s")
    }

    /// A key's bytes, joined on the stack or (past 1 KiB) in a String, are its text; the disk
    /// tier names files and checks stored keys with them.
    @Test func aKeysBytesAreItsTextAndNameItsFile() {
        let primary = CacheKey(route: "http://o", resource: "/page%x")
        let keys = [primary, primary.variant(generation: "g1", selector: "accept=json"), CacheKey(route: "weather", resource: ""),
                    CacheKey(stored: "bare"), CacheKey(route: "r", resource: String(repeating: "é", count: 700))]
        for key in keys {
            #expect(key.withText { Array($0) } == Array(key.text.utf8))
            #expect(DiskTier.name(key) == EntryName(SHA256.hash(data: Array(key.text.utf8))))
            #expect(DiskTier.same(key, key.text))
            #expect(!DiskTier.same(key, key.text + "x") && !DiskTier.same(key, String(key.text.dropLast())))
        }
        #expect(!DiskTier.same(keys[0], keys[1].text) && DiskTier.same(CacheKey(stored: ""), ""))
    }

    @Test func aResourceCannotSpellAVariantOrAnEscape() {
        let primary = CacheKey(route: "o", resource: "/r")
        let variant = primary.variant(generation: "1f", selector: "accept:json\n")
        #expect(CacheKey(route: "o", resource: "/r\u{0}1f\u{0}accept:json\n") != variant)
        #expect(CacheKey(route: "o", resource: "/a\u{0}") != CacheKey(route: "o", resource: "/a%00"))
        #expect(CacheKey(route: "o", resource: "/a%2500") != CacheKey(route: "o", resource: "/a%00"))
    }

    @Test func routesSharingTiersKeepTheirOwnAnswers() async throws {
        let clock = ManualClock()
        let memory = MemoryTier(budget: 1 << 20)
        let disk = try DiskTier(directory: temporaryDirectory(), budget: 1 << 20)
        func cache(_ route: String, body: String) -> (Cache, ScriptedUpstream) {
            let upstream = ScriptedUpstream(clock: clock)
            upstream.change { $0.body = body }
            return (Cache(route: route, policy: CachePolicy(defaultLifetime: 60), memory: memory, disk: disk, fetcher: upstream,
                          clock: clock) { _, entry in .plain(entry) }, upstream)
        }
        let (first, firstUpstream) = cache("first", body: "one")
        let (second, secondUpstream) = cache("second", body: "two")
        let request = CacheRequest(resource: "same", url: "http://upstream.test/same", directives: .none)
        for _ in 0..<2 {
            #expect(try await first.answer(request).get().value == "one")
            #expect(try await second.answer(request).get().value == "two")
        }
        #expect(firstUpstream.calls == 1 && secondUpstream.calls == 1)
        #expect(memory.count == 2)
    }
}
