import Foundation
import HTTPCore
import Testing
@testable import Caching

@Suite(.timeLimit(.minutes(1))) struct CacheControlTests {
    @Test func parsesResponseDirectives() {
        let cc = CacheControl("public, max-age=3600, s-maxage=60, stale-while-revalidate=30, stale-if-error=86400, must-revalidate")
        #expect(cc.isPublic && cc.mustRevalidate)
        #expect(cc.maxAge == 3600)
        #expect(cc.sharedMaxAge == 60)
        #expect(cc.staleWhileRevalidate == 30)
        #expect(cc.staleIfError == 86400)
        #expect(!cc.noStore && !cc.noCache)
    }

    @Test func parsesRequestDirectives() {
        let cc = CacheControl(["no-cache, min-fresh=10", "max-stale, only-if-cached, no-store"])
        #expect(cc.noCache && cc.onlyIfCached && cc.noStore)
        #expect(cc.minFresh == 10)
        #expect(cc.maxStale == .any)
        #expect(CacheControl("max-stale=5").maxStale == .seconds(5))
    }

    @Test func namesAreCaseInsensitiveAndUnknownDirectivesIgnored() {
        let cc = CacheControl("MAX-AGE=5, X-Custom=\"a, b\", No-Store, foo")
        #expect(cc.maxAge == 5)
        #expect(cc.noStore)
    }

    @Test func quotedStringsMayHoldCommas() {
        let cc = CacheControl("private=\"Set-Cookie, X-A\", max-age=9")
        #expect(cc.isPrivate)
        #expect(cc.maxAge == 9)
        #expect(CacheControl("no-cache=\"a,b\", max-age=\"7\"").maxAge == 7)
    }

    @Test func firstOccurrenceWins() {
        #expect(CacheControl(["max-age=10", "max-age=20"]).maxAge == 10)
    }

    @Test func malformedValuesAreHandled() {
        #expect(CacheControl("max-age=abc").maxAge == 0)  // treated as stale
        #expect(CacheControl("max-age=-5").maxAge == 0)
        #expect(CacheControl("max-age=").maxAge == 0)
        #expect(CacheControl("min-fresh=x").minFresh == nil)
        #expect(CacheControl("max-age=99999999999999999999").maxAge == CacheControl.deltaSecondsCeiling)
        #expect(CacheControl(",,, ,").maxAge == nil)
    }

    @Test func cacheStatusRendersAsRFC9211() {
        #expect(CacheStatus(hit: true, ttl: 3542, detail: .memory).description == "larder; hit; ttl=3542; detail=memory")
        #expect(CacheStatus(forward: .miss, forwardStatus: 200, stored: true).description == "larder; fwd=miss; fwd-status=200; stored")
        #expect(CacheStatus(forward: .miss, forwardStatus: 200, stored: true, collapsed: true).description
                == "larder; fwd=miss; fwd-status=200; stored; collapsed")
        #expect(CacheStatus(forward: .stale, forwardStatus: 503, detail: .staleIfError).description
                == "larder; fwd=stale; fwd-status=503; detail=stale-if-error")
        #expect(CacheStatus(hit: true, ttl: -5, detail: .refreshLimited).description == "larder; hit; ttl=-5; detail=refresh-limited")
        #expect(CacheStatus().description == "larder")
    }
}

@Suite(.timeLimit(.minutes(1))) struct HTTPDateParserTests {
    static let expected = Date(timeIntervalSince1970: 784_111_777)  // 1994-11-06 08:49:37 GMT

    @Test func readsAllThreeFormats() {
        #expect(HTTPDateParser.parse("Sun, 06 Nov 1994 08:49:37 GMT") == Self.expected)
        #expect(HTTPDateParser.parse("Sunday, 06-Nov-94 08:49:37 GMT") == Self.expected)
        #expect(HTTPDateParser.parse("Sun Nov  6 08:49:37 1994") == Self.expected)
    }

    @Test func rejectsWhatIsNotADate() {
        for text in ["0", "", "yesterday", "Sun, 31 Feb 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 CET"] {
            #expect(HTTPDateParser.parse(text) == nil, "\(text)")
        }
    }
}
