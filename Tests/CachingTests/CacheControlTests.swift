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

    /// Every directive this cache acts on is recognised, and a name of the same length that
    /// is none of them is not.
    @Test func everyKnownDirectiveIsRecognisedAndNearNamesAreNot() {
        let cc = CacheControl("proxy-revalidate, must-understand, no-transform, immutable, private")
        #expect(cc.proxyRevalidate && cc.mustUnderstand && cc.noTransform && cc.immutable && cc.isPrivate)
        let near = CacheControl("publik, max-agf=1, privat3, no-cachf, no-storf, s-maxagf=1, max-stalf, min-freso=1, immutablf, "
                                + "no-transforn, stale-if-errot=1, only-if-cachee, must-revalidatf, must-understane, "
                                + "proxy-revalidatf, stale-while-revalidatf=1")
        #expect(near == CacheControl())
    }

    @Test func namesAreCaseInsensitiveAndUnknownDirectivesIgnored() {
        let cc = CacheControl("MAX-AGE=5, X-Custom=\"a, b\", No-Store, foo")
        #expect(cc.maxAge == 5)
        #expect(cc.noStore)
    }

    /// Names are lower-cased as ASCII, up to the longest directive's length; a longer name,
    /// or one with other bytes, is none of them.
    @Test func namesOfEveryLengthAndByteAreMatchedOnlyWhenTheyAreADirective() {
        #expect(CacheControl("Stale-While-Revalidate=5, STALE-IF-ERROR=6").staleWhileRevalidate == 5)
        #expect(CacheControl("Stale-While-Revalidate=5, STALE-IF-ERROR=6").staleIfError == 6)
        #expect(CacheControl("STALE-WHILE-REVALIDATEX=5, STALE-WHILE-REVALIDATE-AND-MORE=5") == CacheControl())
        #expect(CacheControl("na\u{EF}ve, m\u{E1}x-age=3, max-age=4").maxAge == 4)
        #expect(CacheControl("no-cache=\"a\\\"b, c\", max-age=7, é").maxAge == 7)
        #expect(CacheControl("=5, max-age = 8 ,").maxAge == 8)
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
        #expect(CacheControl("max-age=\"\"").maxAge == 0)
        #expect(CacheControl("max-age=\"").maxAge == 0)
        #expect(CacheControl("max-age=\"12").maxAge == 0)
        #expect(CacheControl("max-age=1 2").maxAge == 0)
        #expect(CacheControl("max-age=٣").maxAge == 0)  // a digit, but not an ASCII one
        #expect(CacheControl("max-age=9999999999").maxAge == CacheControl.deltaSecondsCeiling)
        #expect(CacheControl("max-age=2147483647").maxAge == 2_147_483_647)
        #expect(CacheControl("max-age=0000000042").maxAge == 42)
        #expect(CacheControl("max-age=\t\"60\"\t, s-maxage =  5").maxAge == 60)
        #expect(CacheControl("max-age=\t\"60\"\t, s-maxage =  5").sharedMaxAge == 5)
    }

    /// OWS is spaces and tabs, trimmed as bytes at both ends; what lies between is kept.
    @Test func optionalWhitespaceIsTrimmedAtBothEndsOnly() {
        #expect(" \t a \t b\t ".trimmingOWS() == "a \t b")
        #expect("\t\t".trimmingOWS() == "")
        #expect("".trimmingOWS() == "")
        #expect(" é ü ".trimmingOWS() == "é ü")
        #expect("x".trimmingOWS() == "x")
        #expect(" \u{A0}x\u{A0} ".trimmingOWS() == "\u{A0}x\u{A0}")  // no-break space is not OWS
        let field = "Cache-Control:  max-age=5  "
        #expect(field.dropFirst(14).trimmingOWS() == "max-age=5")
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

    /// Detail members are copied from a table: each must come out as the word it names.
    @Test func everyDetailOfAHitRendersItsOwnWord() {
        for detail in CacheStatus.Detail.allCases {
            #expect(CacheStatus(hit: true, ttl: 7, detail: detail).description == "larder; hit; ttl=7; detail=\(detail.rawValue)")
            #expect(CacheStatus(hit: true, ttl: 7, stored: true, detail: detail).description == "larder; hit; ttl=7; stored; detail=\(detail.rawValue)")
        }
        #expect(CacheStatus(hit: true, ttl: 0).description == "larder; hit; ttl=0")
        for forward in CacheStatus.Forward.allCases {
            #expect(CacheStatus(forward: forward).description == "larder; fwd=\(forward.rawValue)")
        }
    }

    /// The value is put together in a fixed buffer on the stack: the longest one must fit.
    @Test func theLongestCacheStatusComesOutWhole() {
        let longest = CacheStatus(hit: true, forward: .request, forwardStatus: .min, ttl: .min, stored: true, collapsed: true,
                                  detail: .refreshLimited)
        #expect(longest.description == "larder; hit; fwd=request; fwd-status=-9223372036854775808; ttl=-9223372036854775808; "
                + "stored; collapsed; detail=refresh-limited")
    }
}

@Suite(.timeLimit(.minutes(1))) struct HTTPDateParserTests {
    static let expected = Date(timeIntervalSince1970: 784_111_777)  // 1994-11-06 08:49:37 GMT

    @Test func readsAllThreeFormats() {
        #expect(HTTPDateParser.parse("Sun, 06 Nov 1994 08:49:37 GMT") == Self.expected)
        #expect(HTTPDateParser.parse("Sunday, 06-Nov-94 08:49:37 GMT") == Self.expected)
        #expect(HTTPDateParser.parse("Sun Nov  6 08:49:37 1994") == Self.expected)
    }

    /// What Larder writes: fixed-width fields, two-digit day and time, four-digit year.
    @Test func writesIMFFixdate() {
        #expect(HTTPDate.format(Self.expected) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(epochSeconds: 0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(epochSeconds: 1_795_478_399) == "Mon, 23 Nov 2026 23:59:59 GMT")
        #expect(HTTPDate.format(epochSeconds: 1_772_694_489) == "Thu, 05 Mar 2026 07:08:09 GMT")
        #expect(HTTPDate.format(epochSeconds: 253_402_300_799) == "Fri, 31 Dec 9999 23:59:59 GMT")
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
