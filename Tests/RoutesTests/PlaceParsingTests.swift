import Testing
@testable import Routes
import HTTPServer

/// The `lat`/`lon` scanner on the raw query bytes: what counts as the parameter, what is
/// ignored, and the reason each bad query gets.
@Suite struct PlaceParsingTests {
    func reasons(_ query: String?) -> [String] {
        switch Place.parse(query: query.map { Substring($0) }, precision: 2) {
        case .success(let place): ["ok " + place.resource]
        case .failure(let problem): problem.errors.map(\.reason)
        }
    }

    @Test func theFirstLatAndLonAreFoundAmongOtherParameters() {
        #expect(reasons("lat=52.5201&lon=13.4149") == ["ok 52.52,13.41"])
        #expect(reasons("&&x=1&lon=-0.004&latitude=9&lat=1.005&") == ["ok 1.01,0"])
        #expect(reasons("lo=1&la=2&lat=3&lon=4") == ["ok 3,4"])
    }

    @Test func missingRepeatedEmptyAndBadValuesAreEachNamed() {
        #expect(reasons(nil) == ["lat is required.", "lon is required."])
        #expect(reasons("") == ["lat is required.", "lon is required."])
        #expect(reasons("lat=1&lon=2&lat=1") == ["lat must be given once."])
        #expect(reasons("lat&lon=2") == ["lat must be a plain decimal number such as 52.52."])
        #expect(reasons("lat=&lon=2") == ["lat must be a plain decimal number such as 52.52."])
        #expect(reasons("lat=91&lon=x") == ["lat must be between -90 and 90.", "lon must be a plain decimal number such as 52.52."])
        #expect(reasons("latx=1&lon=2") == ["lat is required."])
    }
}

@Suite(.timeLimit(.minutes(1))) struct CoordinateTests {
    @Test(arguments: [("52.5201", 2, "52.52"), ("52.525", 2, "52.53"), ("-52.525", 2, "-52.53"), ("13.4149", 2, "13.41"),
                      ("0.004", 2, "0"), ("-0.004", 2, "0"), ("90", 2, "90"), ("-180.00", 2, "-180"), ("1.5", 0, "2"),
                      ("52.99999", 2, "53"), ("7", 3, "7"), ("0.0005", 3, "0.001")])
    func roundsHalfAwayFromZero(_ example: (String, Int, String)) throws {
        #expect(try Coordinate(parsing: Substring(example.0), limit: 180, precision: example.1).text == example.2)
    }

    @Test func rangeIsCheckedOnTheValueAsGiven() {
        #expect(throws: Coordinate.Problem.outOfRange) { try Coordinate(parsing: "90.001", limit: 90, precision: 2) }
        #expect(throws: Coordinate.Problem.notANumber) { try Coordinate(parsing: "1.", limit: 90, precision: 2) }
        #expect(throws: Coordinate.Problem.notANumber) { try Coordinate(parsing: ".5", limit: 90, precision: 2) }
    }
}
