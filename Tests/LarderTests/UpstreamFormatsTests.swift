import Caching
import Foundation
import Testing
@testable import Larder

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
