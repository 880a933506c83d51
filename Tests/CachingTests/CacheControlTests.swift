import Foundation
@testable import HTTPCore
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

    /// The byte-position reading of IMF-fixdate agrees with the reading by parts wherever it
    /// answers, and answers for every date Larder itself writes.
    @Test func theIMFFixdateFastPathAgreesWithTheGeneralReading() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let seconds = Int.random(in: -2_208_988_800...253_402_300_799, using: &generator)  // 1900 … 9999
            let text = HTTPDate.format(epochSeconds: seconds)
            #expect(HTTPDateParser.imfFixdate(text) == Date(timeIntervalSince1970: TimeInterval(seconds)), "\(text)")
            #expect(HTTPDateParser.anyFormat(text) == HTTPDateParser.imfFixdate(text), "\(text)")
        }
        let odd = ["sun, 06 nov 1994 08:49:37 gmt", "SUN, 06 NOV 1994 08:49:37 GMT", "Thu, 29 Feb 2024 23:59:60 GMT",
                   "Wed, 29 Feb 2023 12:00:00 GMT", "Fri, 31 Dec 9999 23:59:60 GMT", "Sun, 06 Nox 1994 08:49:37 GMT",
                   "Sun, +6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMX", "123, 06 Nov 1994 08:49:37 GMT",
                   "Sun, 06 Nov 1899 08:49:37 GMT", "Sun, 06 Nov 1994 08:60:37 GMT", "Sun, 00 Nov 1994 08:49:37 GMT"]
        for text in odd {
            if let fast = HTTPDateParser.imfFixdate(text) { #expect(fast == HTTPDateParser.anyFormat(text), "\(text)") }
            #expect(HTTPDateParser.parse(text) == HTTPDateParser.anyFormat(text), "\(text)")
        }
        #expect(HTTPDateParser.imfFixdate("sun, 06 nov 1994 08:49:37 gmt") == Self.expected)
        #expect(HTTPDateParser.parse("Wed, 29 Feb 2023 12:00:00 GMT") == nil)
    }
}
