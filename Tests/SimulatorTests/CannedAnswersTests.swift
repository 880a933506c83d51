import Foundation
import Testing
import Simulator

/// The simulator's canned answers are the upstreams' JSON, with the values given where the
/// real APIs put them.
@Suite struct CannedAnswersTests {
    @Test func anOpenMeteoAnswerCarriesThePlaceTimeAndReading() throws {
        let body = CannedAnswers.openMeteo(latitude: "52.52", longitude: "13.41", time: "2026-12-06T12:15", temperature: "-3.5",
                                           weatherCode: 61, utcOffset: 3600)
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        #expect(answer["latitude"] as? Double == 52.52)
        #expect(answer["longitude"] as? Double == 13.41)
        #expect(answer["utc_offset_seconds"] as? Int == 3600)
        let current = try #require(answer["current"] as? [String: Any])
        #expect(current["time"] as? String == "2026-12-06T12:15")
        #expect(current["temperature_2m"] as? Double == -3.5)
        #expect(current["weather_code"] as? Int == 61)
    }

    @Test func aBalanceAnswerCarriesTheAmountAndDate() throws {
        let body = CannedAnswers.balance("12.50", date: "2026-12-06 12:15:00 +0100")
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        #expect(answer["balance"] as? Double == 12.5)
        #expect(answer["date"] as? String == "2026-12-06 12:15:00 +0100")
    }
}
