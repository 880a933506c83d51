import HTTPCore
import Bodies
import Foundation
import Testing
@testable import Caching

@Suite(.timeLimit(.minutes(1))) struct FreshnessTests {
    @Test func lifetimePrefersSharedMaxAgeThenMaxAgeThenExpiresThenDefault() {
        #expect(Freshness.lifetime(of: entry([("Cache-Control", "max-age=60, s-maxage=30")]), defaultLifetime: 600) == 30)
        #expect(Freshness.lifetime(of: entry([("Cache-Control", "max-age=60"), ("Expires", httpDate(1000)), ("Date", httpDate(0))]),
                                   defaultLifetime: 600) == 60)
        #expect(Freshness.lifetime(of: entry([("Expires", httpDate(100)), ("Date", httpDate(0))]), defaultLifetime: 600) == 100)
        #expect(Freshness.lifetime(of: entry([]), defaultLifetime: 600) == 600)
        #expect(Freshness.lifetime(of: entry([]), defaultLifetime: nil) == 0)
    }

    @Test func invalidOrPastExpiresMeansStale() {
        #expect(Freshness.lifetime(of: entry([("Expires", "0"), ("Date", httpDate(0))]), defaultLifetime: 600) == 0)
        #expect(Freshness.lifetime(of: entry([("Expires", httpDate(-50)), ("Date", httpDate(0))]), defaultLifetime: 600) == 0)
    }

    @Test func expiresWithoutDateCountsFromTheResponseTime() {
        #expect(Freshness.lifetime(of: entry([("Expires", httpDate(130))], received: 30), defaultLifetime: nil) == 100)
    }

    // RFC 9111 §4.2.3 worked through by hand:
    //   request sent at 0, response received at 2, Date says 1, Age says 10, now is 50.
    //   apparent_age = max(0, 2 - 1) = 1; response_delay = 2; corrected_age_value = 10 + 2 = 12;
    //   corrected_initial_age = max(1, 12) = 12; resident_time = 50 - 2 = 48; current_age = 60.
    @Test func currentAgeFollowsRFC9111() {
        let stored = entry([("Date", httpDate(1)), ("Age", "10")], requested: 0, received: 2)
        #expect(Freshness.currentAge(of: stored, now: t(50)) == 60)
    }

    // The upstream clock runs 30 s slow (Date = received - 30) and no Age: apparent_age = 30 wins.
    @Test func apparentAgeFromAnUpstreamClockBehindOurs() {
        let stored = entry([("Date", httpDate(-28))], requested: 0, received: 2)
        #expect(Freshness.currentAge(of: stored, now: t(2)) == 30)
        #expect(Freshness.currentAge(of: stored, now: t(12)) == 40)
    }

    // The upstream clock runs ahead (Date after our receipt): apparent_age clamps to 0,
    // and the response delay still counts.
    @Test func upstreamClockAheadOfOursNeverMakesAgeNegative() {
        let stored = entry([("Date", httpDate(500))], requested: 0, received: 3)
        #expect(Freshness.currentAge(of: stored, now: t(3)) == 3)
    }

    @Test func invalidAgeIsIgnored() {
        let stored = entry([("Age", "soon")], requested: 0, received: 0)
        #expect(Freshness.currentAge(of: stored, now: t(5)) == 5)
    }

    @Test func ageHeaderIsWholeSecondsRoundedDown() {
        #expect(Freshness.ageHeader(59.999) == 59)
        #expect(Freshness.ageHeader(-3) == 0)
        #expect(Freshness.ageHeader(1e12) == CacheControl.deltaSecondsCeiling)
    }

    @Test func threeOhFourFreshensHeadersAndTimesButKeepsTheBody() {
        let stored = entry([("ETag", "\"1\""), ("Cache-Control", "max-age=60"), ("Content-Length", "2"), ("X-Kept", "k")],
                           requested: 0, received: 1, body: "{}")
        let fresh = stored.freshened(by: [("ETag", "\"1\""), ("Cache-Control", "max-age=120"), ("Content-Length", "0")],
                                     requestTime: t(100), responseTime: t(101))
        #expect(fresh.body == .bytes(Array("{}".utf8)))
        #expect(fresh.cacheControl.maxAge == 120)
        #expect(fresh.header("content-length") == "2")
        #expect(fresh.header("x-kept") == "k")
        #expect(fresh.requestTime == t(100) && fresh.responseTime == t(101))
    }
}
