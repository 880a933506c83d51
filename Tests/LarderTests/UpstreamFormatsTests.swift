import HTTPCore
import Caching
import Foundation
import Testing
@testable import Larder
@testable import Routes
@testable import UpstreamPolicy

/// The upstream formats are outside input: a body that is not a real answer is an error
/// (then never stored), never a wrong value served.
@Suite struct UpstreamFormatsTests {
    @Test(arguments: ["2026-11-21T20:45", "2024-02-29T23:59", "2026-11-21T20:45:59"])
    func realTimesAreAccepted(_ time: String) {
        #expect(OpenMeteoFormat.isoTime(openMeteo: time) != nil)
    }

    @Test(arguments: ["9999-99-99T99:99", "2026-13-01T00:00", "2026-00-10T00:00", "2026-02-29T12:00", "2026-04-31T12:00",
                      "2026-11-00T12:00", "2026-11-21T24:00", "2026-11-21T20:60", "2026-11-21T20:45:60", "2026-11-21 20:45"])
    func impossibleTimesAreRejected(_ time: String) {
        #expect(OpenMeteoFormat.isoTime(openMeteo: time) == nil)
    }

    /// With `timezone=` in the URL, Open-Meteo gives local time and its offset from UTC.
    @Test(arguments: [("2026-11-21T12:45", 3600, "2026-11-21T11:45:00Z"), ("2026-11-21T12:45", -3600, "2026-11-21T13:45:00Z"),
                      ("2026-01-01T00:30", 3600, "2025-12-31T23:30:00Z"), ("2026-12-31T20:00", -12600, "2026-12-31T23:30:00Z"),
                      ("2024-03-01T05:00", 50400, "2024-02-29T15:00:00Z"), ("2026-11-21T20:45", 0, "2026-11-21T20:45:00Z"),
                      ("2026-11-21T20:45:59", 20700, "2026-11-21T15:00:59Z")])
    func localTimesAreConvertedToUTC(_ time: String, _ offset: Int, _ utc: String) {
        #expect(OpenMeteoFormat.isoTime(openMeteo: time, utcOffset: offset) == utc)
    }

    @Test func theOffsetOfAnAnswerIsApplied() throws {
        let body = #"{"utc_offset_seconds":3600,"current":{"time":"2026-11-21T12:45","temperature_2m":3.2,"weather_code":3}}"#
        let entry = CacheEntry(status: 200, headers: [], body: Array(body.utf8), requestTime: Date(), responseTime: Date())
        let json = String(decoding: try OpenMeteoFormat.json(resource: "52.52,13.41", entry: entry), as: UTF8.self)
        #expect(json.contains(#""lastUpdate":"2026-11-21T11:45:00Z""#))
    }

    @Test(arguments: [#""utc_offset_seconds":"3600""#, #""utc_offset_seconds":1.5"#, #""utc_offset_seconds":64801"#,
                      #""utc_offset_seconds":-99999999999999999999"#])
    func anUnusableOffsetMakesTheAnswerUndecodable(_ member: String) {
        let body = "{\(member),\"current\":{\"time\":\"2026-11-21T12:45\",\"temperature_2m\":3.2,\"weather_code\":3}}"
        let entry = CacheEntry(status: 200, headers: [], body: Array(body.utf8), requestTime: Date(), responseTime: Date())
        #expect(throws: UndecodableAnswer.self) { try OpenMeteoFormat.json(resource: "52.52,13.41", entry: entry) }
    }

    @Test func anErrorBodysReasonIsReadAndCut() {
        #expect(UpstreamErrorBody.reason(in: Array(#"{"error":true,"reason":"Latitude must be in range of -90 to 90°."}"#.utf8))
            == "Latitude must be in range of -90 to 90°.")
        let long = String(repeating: "é", count: 300)
        let cut = UpstreamErrorBody.reason(in: Array("{\"reason\":\"\(long)\"}".utf8))
        #expect(cut.map { $0.utf8.count <= UpstreamErrorBody.longestReason && $0.hasSuffix("é…") } == true)
        for other in ["", "[]", "{\"reason\":3}", "<html>", "{\"error\":true}"] {
            #expect(UpstreamErrorBody.reason(in: Array(other.utf8)) == nil, "\(other)")
        }
    }

    @Test func anAnswerWithAnImpossibleTimeIsUndecodable() {
        let body = "{\"current\":{\"time\":\"9999-99-99T99:99\",\"temperature_2m\":3.2,\"weather_code\":3}}"
        let entry = CacheEntry(status: 200, headers: [], body: Array(body.utf8), requestTime: Date(), responseTime: Date())
        #expect(throws: UndecodableAnswer.self) { try OpenMeteoFormat.json(resource: "52.52,13.41", entry: entry) }
    }

    @Test func theUpstreamURLCarriesThePlaceAfterTheBaseOwnQuery() {
        #expect(OpenMeteoFormat.url(base: "http://h/v1/forecast", resource: "-52.5,13.41")
            == "http://h/v1/forecast?latitude=-52.5&longitude=13.41&current=temperature_2m,weather_code")
        #expect(OpenMeteoFormat.url(base: "http://h/v1/forecast?apikey=k", resource: "0,-180")
            == "http://h/v1/forecast?apikey=k&latitude=0&longitude=-180&current=temperature_2m,weather_code")
    }
}
