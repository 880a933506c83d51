import Foundation
import HTTPCore
import Bodies
import Testing
@testable import Caching

/// The pure rules under the shared cache: CDN-Cache-Control as a structured field, strict
/// HTTP dates, Age parsing, Vary selection and §3 storability.
@Suite(.timeLimit(.minutes(1)))
struct SharedRulesTests {
    @Test(arguments: [
        ("max-age=60", 60), ("max-age=60, private", 60), ("no-store, max-age=5;x=1", 5), ("max-age=3600, foo=\"bar\", baz=?1", 3600),
        // An inner list is valid RFC 8941: a directive Larder does not know keeps the field.
        ("max-age=30, x=(1 2), y=(\"a\" b);p=1", 30), ("max-age=45, z=()", 45),
    ])
    func validTargetedFieldsParse(_ value: String, _ maxAge: Int) throws {
        #expect(try #require(TargetedCacheControl.parse([value])).maxAge == maxAge)
    }

    @Test(arguments: ["max-age=10000, &&&&&", "max-age=\"10000\"", "max-age=1.5", "Max-Age=60", "max-age=60,", "max-age=-1", "",
                      "max-age=(60)", "max-age=60, x=(1 2"])
    func invalidTargetedFieldsAreIgnored(_ value: String) {
        #expect(TargetedCacheControl.parse([value]) == nil)
    }

    @Test func bareDirectivesBesideAnInnerListAreKept() throws {
        let parsed = try #require(TargetedCacheControl.parse(["private, groups=(\"a\" \"b\")", "no-store=?1, no-cache=?0"]))
        #expect(parsed.isPrivate && parsed.noStore && !parsed.noCache)
    }

    @Test func targetedFieldReplacesCacheControlAndExpires() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let entry = CacheEntry(status: 200, headers: [("Cache-Control", "max-age=600"), ("Expires", HTTPDate.format(now.addingTimeInterval(900))),
                                                      ("CDN-Cache-Control", "no-cache")], body: [], requestTime: now, responseTime: now)
        #expect(entry.isTargeted && entry.cacheControl.noCache && entry.cacheControl.maxAge == nil && entry.expires == nil)
    }

    @Test(arguments: ["Thu 18 Aug 2050 02:01:18 GMT", "Thu, 18  Aug  2050 02:01:18 GMT", "Thu, 18-Aug-2050 02:01:18 GMT",
                      "Thu, 18 Aug 2050 02.01.18 GMT", "Thu, 18 Aug 2050 2:01:18 GMT", "Thu, 18 Aug 50 02:01:18 GMT",
                      "Thu, 18 Aug 2050 02:01:18 UTC", "0"])
    func malformedDatesAreInvalid(_ text: String) {
        #expect(HTTPDateParser.parse(text) == nil)
    }

    @Test(arguments: ["Thu, 18 Aug 2050 02:01:18 GMT", "Thursday, 18-Aug-50 02:01:18 GMT", "Thu Aug 18 02:01:18 2050"])
    func theThreeDateFormatsParse(_ text: String) throws {
        let date = try #require(HTTPDateParser.parse(text))
        #expect(date.timeIntervalSince1970 == 2_544_400_878)
    }

    /// Found by the http-date fuzz target: a leap second on the last day an HTTP date can
    /// state carried into year 10000, which Larder would then have sent as a malformed Date.
    @Test func aLeapSecondStaysInItsMinute() throws {
        let last = try #require(HTTPDateParser.parse("Fri, 31 Dec 9999 23:59:60 GMT"))
        #expect(last == HTTPDateParser.parse("Fri, 31 Dec 9999 23:59:59 GMT"))
        #expect(HTTPDate.format(last) == "Fri, 31 Dec 9999 23:59:59 GMT")
    }

    @Test func letterCaseAloneIsForgiven() {
        #expect(HTTPDateParser.parse("THU, 18 AUG 2050 02:01:18 gmt")?.timeIntervalSince1970 == 2_544_400_878)
    }

    @Test func asctimePadsSingleDigitDays() {
        #expect(HTTPDateParser.parse("Sun Nov  6 08:49:37 1994")?.timeIntervalSince1970 == 784_111_777)
    }

    @Test(arguments: [("7200, 0", 7200), ("0, 7200", 0), ("old", 0), ("-5", 0), ("1.5", 0), ("2147483649", 2_147_483_648)])
    func ageIsTheFirstMemberOfTheFirstLine(_ value: String, _ expected: Int) {
        let entry = CacheEntry(status: 200, headers: [("Age", value), ("Age", "99")], body: [], requestTime: Date(), responseTime: Date())
        #expect(entry.ageValue == expected)
    }

    @Test func varySelectorsIgnoreOrderCaseAndSpacing() {
        let vary = Vary(["Accept-Language,  accept", "X-Foo"])
        #expect(vary.names == ["accept", "accept-language", "x-foo"] && !vary.isStar)
        let a = vary.selector([("Accept", "a, b"), ("Accept-Language", "de"), ("X-Foo", "1")])
        let b = vary.selector([("x-foo", "1"), ("accept", "a,b"), ("ACCEPT-LANGUAGE", "de")])
        #expect(a == b)
        #expect(vary.selector([("Accept", "a, b"), ("Accept-Language", "de")]) != a)  // X-Foo absent
        #expect(vary.selector([("Accept", "a, b"), ("Accept-Language", "de"), ("X-Foo", "")]) != vary.selector([("Accept", "a, b"), ("Accept-Language", "de")]))
        #expect(Vary([", *"]).isStar && Vary(["Foo", "*"]).isStar)
    }

    @Test(arguments: [
        (200, "max-age=60", false, true), (599, "max-age=60", false, true), (599, "no-store, must-understand, max-age=60", false, false),
        (200, "no-store, must-understand, max-age=60", false, true), (206, "max-age=60", false, false), (304, "max-age=60", false, false),
        (200, "max-age=0", false, false), (200, "", false, false), (200, "", true, true), (201, "", true, false), (201, "public", true, true),
    ])
    func storability(_ status: Int, _ cacheControl: String, _ lastModified: Bool, _ stored: Bool) {
        let now = Date()
        var headers = cacheControl.isEmpty ? [] : [("Cache-Control", cacheControl)]
        if lastModified { headers += [("Date", HTTPDate.format(now)), ("Last-Modified", HTTPDate.format(now.addingTimeInterval(-9000)))] }
        let entry = CacheEntry(status: status, headers: HTTPHeaders(headers), body: [], requestTime: now, responseTime: now)
        #expect(StorageRule.sharedCache.mayStore(entry, request: .none, hasAuthorization: false, policy: .sharedCache) == stored)
    }
}
