import HTTPServer
import Foundation
import Testing
import TestSupport
@testable import Routes
@testable import Settings

/// The rules an aggregate is made by, without sockets: its freshness from its parts', the
/// parameters its parts take, what is kept of a part's JSON, and how a file declares one.
@Suite(.timeLimit(.minutes(1))) struct AggregateRulesTests {
    @Test func itIsAsOldAsItsOldestPartAndFreshWhileEveryPartIs() {
        func freshness(_ parts: [(age: Int, lifetime: Int)]) -> (age: Int, maxAge: Int) {
            var whole = AggregateAnswer.Freshness()
            for part in parts { whole.add(age: part.age, lifetime: part.lifetime) }
            return (whole.age, whole.maxAge)
        }
        // Weather 600 s old 20 (580 left), balance 30 s old 0 (30 left): 30 left at age 20.
        #expect(freshness([(age: 20, lifetime: 600), (age: 0, lifetime: 30)]) == (age: 20, maxAge: 50))
        // Min of lifetimes would say 30 at age 500: stale at once, though every part has 100 s left.
        #expect(freshness([(age: 500, lifetime: 600), (age: 0, lifetime: 100)]) == (age: 500, maxAge: 600))
        // A part served stale makes the whole stale by as much.
        #expect(freshness([(age: 90, lifetime: 60), (age: 0, lifetime: 30)]) == (age: 90, maxAge: 60))
        #expect(freshness([]) == (age: 0, maxAge: 0))
    }

    @Test func eachUsedParameterIsRequiredOnceAndPassedRaw() throws {
        let found = try Aggregate.values(of: ["lat", "lon"], in: "lon=%2B1&x=1&lat=52.5&latitude=3").get()
        #expect(found == ["52.5", "%2B1"])
        #expect(try Aggregate.values(of: ["lat"], in: "lat").get() == [""])
        #expect(try Aggregate.values(of: ["q"], in: "q=a=b&&").get() == ["a=b"])
        guard case .failure(let problem) = Aggregate.values(of: ["lat", "lon", "q"], in: "lat=1&lat=2&q=") else {
            Issue.record("a missing and a repeated parameter were accepted")
            return
        }
        #expect(problem.errors.map(\.name) == ["lat", "lon"])
        #expect(problem.detail == "lat must be given once. lon is required.")
    }

    @Test func aTargetTakesPlaceholdersInItsQueryOnly() throws {
        let target = try #require(PartTarget("/rates/latest?base={currency}&symbols={symbols}&v=2"))
        #expect(target.path == "/rates/latest" && target.parameters == ["currency", "symbols"])
        #expect(target.description == "/rates/latest?base={currency}&symbols={symbols}&v=2")
        for bad in ["rates", "/rates/{id}", "/r?a={", "/r?a={}", "/r?a={b c}", "/r?a=}", "/r#x"] { #expect(PartTarget(bad) == nil, "\(bad)") }
        #expect(PartTarget("/balance")?.parameters == [])
    }

    @Test func aPartKeepsThePointedValueAndTheListedMembers() throws {
        let body = Array(#"{"base":"EUR","rates":{"USD":1.1,"GBP":0.85,"a/b":[1,{"x":true}]}}"#.utf8)
        func shaped(pointer: String? = nil, fields: [String]? = nil, merge: Bool = false) -> Result<PartShape.Shaped, ShapeProblem> {
            PartShape(pointer: pointer, fields: fields, trusted: false, merge: merge).shape(body)
        }
        #expect(try shaped().get().json == body, "nothing selected: the bytes as they came")
        #expect(String(decoding: try shaped(pointer: "/rates", fields: ["GBP", "USD", "none"]).get().json, as: UTF8.self) == #"{"GBP":0.85,"USD":1.1}"#)
        #expect(String(decoding: try shaped(pointer: "/rates/a~1b/1/x").get().json, as: UTF8.self) == "true")
        #expect(throws: ShapeProblem.self) { try shaped(pointer: "/rates/EUR").get() }
        #expect(throws: ShapeProblem.self) { try shaped(pointer: "/base", fields: ["x"]).get() }
        #expect(throws: ShapeProblem.self) { try shaped(pointer: "/base", merge: true).get() }
        #expect(throws: ShapeProblem.self) { try PartShape(pointer: nil, fields: nil, trusted: false, merge: false).shape(Array("<html>".utf8)).get() }
        let members = try shaped(pointer: "/rates", fields: ["USD", "GBP"], merge: true).get().members
        #expect(members.map(\.name) == ["GBP", "USD"])
    }

    /// Merged parts: in the declared order, a later part's member replaces an earlier one's
    /// in the place the first gave it.
    @Test func aLaterPartsMemberWinsAMerge() {
        let first = PartShape.Shaped(json: [], members: [("a", Array("1".utf8)), ("b", Array("2".utf8))])
        let second = PartShape.Shaped(json: [], members: [("a", Array("\"x\"".utf8)), ("c", Array("3".utf8))])
        #expect(String(decoding: AggregateAnswer.merged([first, second]), as: UTF8.self) == #"{"a":"x","b":2,"c":3}"#)
    }

    @Test func aFileDeclaresAggregatesAndEachBadOneIsRefusedWithItsLine() async throws {
        let good = """
        routes:
          /rates: {origin: "http://127.0.0.1:9"}
        aggregates:
          /dash:
            deadline: 250ms
            merge: true
            parts:
              weather: /weather?lat={lat}&lon={lon}
              rates: {target: "/rates/latest?base={currency}", required: false, pointer: /rates, fields: [USD]}
        """
        let settings = try ServeSettings.resolve(flags: [:], environment: [:], file: try await ConfigFile.load(path: try ConfigFixture.file(good)))
        let dash = try #require(settings.aggregates.first)
        #expect(dash.path == "/dash" && dash.merge && dash.deadline == .milliseconds(250))
        #expect(dash.parts.map(\.name) == ["weather", "rates"] && dash.parts[1].required == false && dash.parts[1].fields == ["USD"])
        #expect(settings.servedAggregates.map(\.path) == ["/overview", "/dash"])
        #expect(settings.servedPaths.contains("/dash"))

        let bad = """
        aggregates:
          /a:
            parts:
              Bad: /balance
              odd: /balance/{id}
              opts: {target: /balance, required: maybe, pointer: rates, colour: red}
          /b:
            deadline: 0s
            parts: {}
          /c: {merge: true}
        """
        let (path, lines) = try await ConfigFixture.problems(bad)
        #expect(lines == [
            "\(path):4: aggregates./a.parts.Bad: a part's name is a lower-case letter, then lower-case letters, digits, _ or - (64 at most)",
            "\(path):5: aggregates./a.parts.odd: the target must be a path of this Larder with {name} placeholders in its query only, got '/balance/{id}'",
            "\(path):6: aggregates./a.parts.opts: required must be true or false",
            "\(path):6: aggregates./a.parts.opts: pointer must be an RFC 6901 JSON pointer (/rates, or empty for the whole answer)",
            "\(path):6: aggregates./a.parts.opts: 'colour' is not a part setting Larder knows (target, required, pointer, fields)",
            "\(path):8: aggregates./b.deadline: must be above zero",
            "\(path):9: aggregates./b.parts: must map part names to targets (weather: /weather?lat={lat}&lon={lon})",
            "\(path):10: aggregates./c: needs parts",
        ], "\(lines.joined(separator: "\n"))")
        // What a part names is checked once the file's shape is right.
        let unserved = "aggregates:\n  /weather:\n    parts: {w: /balance}\n  /a:\n    parts:\n      nowhere: /nowhere?x={x}\n      loop: /overview\n"
        let (other, named) = try await ConfigFixture.problems(unserved)
        #expect(named == [
            "\(other):2: aggregates./weather: /weather is answered by a built-in route",
            "\(other):6: aggregates./a.parts.nowhere: no route of this Larder serves /nowhere",
            "\(other):7: aggregates./a.parts.loop: /overview is an aggregate; a part names a built-in or pass-through route",
        ], "\(named.joined(separator: "\n"))")
    }

    /// `check-config`, the real command, refuses a bad aggregate with its line.
    @Test func checkConfigRefusesABadAggregate() async throws {
        let path = try ConfigFixture.file("aggregates:\n  /dash:\n    parts:\n      rates: /rates/latest\n")
        let checked = try LarderProcess(["check-config", path])
        #expect(await checked.waitForExit() == 2)
        #expect(checked.errorOutput == "larder: \(path):4: aggregates./dash.parts.rates: no route of this Larder serves /rates/latest\n", "\(checked.errorOutput)")
    }
}
