#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import TestSupport
@testable import Settings

/// `check-config` (and a reload, and `serve`) reports every problem of a file at once, in
/// the order of its lines, each at its own line: top-level values, routes, aggregates and
/// their parts' options alike, and a key given twice where it is given again.
@Suite(.timeLimit(.minutes(1))) struct ConfigFileProblemsTests {
    static let several = """
        port: 99999
        memory-limt: 64MiB
        routes:
          /api:
            origin: http://127.0.0.1:9
            via: maybe
            strip-prefix: true
            replace-prefix: /v2
            lifetime:
              200: 10m
              404: soon
        aggregates:
          /dash:
            parts:
              rates:
                target: /api/rates
                required: maybe
                pointer: rates
                fields: [rates.USD]
        log-level: loud
        port: 8081

        """

    static let expected = [
        "1: port must be a whole number from 0 to 65535, got '99999'",
        "2: memory-limt: not a setting Larder knows",
        "6: routes./api.via: must be true or false",
        "8: routes./api.replace-prefix: cannot go with strip-prefix (line 7): each says what becomes of the prefix; give strip-prefix or replace-prefix, not both",
        "11: routes./api.lifetime: must be a duration (seconds, or with us, ms, s, m, h)",
        "17: aggregates./dash.parts.rates: required must be true or false",
        "18: aggregates./dash.parts.rates: pointer must be an RFC 6901 JSON pointer (/rates, or empty for the whole answer)",
        "19: aggregates./dash.parts.rates: fields name members of the object kept: 'rates.USD' would select nothing; point at its object and name the member (pointer: /rates, fields: [USD])",
        "20: log-level must be one of trace, debug, info, notice, warning, error, critical (or warn), got 'loud'",
        "21: port: given again (first on line 1); a key is given once in its mapping",
    ]

    @Test func everyProblemOfAFileIsListedAtOnceInLineOrder() async throws {
        let (path, lines) = try await ConfigFixture.problems(Self.several)
        #expect(lines == Self.expected.map { "\(path):\($0)" }, "\(lines.joined(separator: "\n"))")
    }

    /// A key given again in a route, a part or the file's top level is named at its own line,
    /// and the first one given is the one read.
    @Test func aKeyGivenAgainIsReportedAtItsOwnLine() async throws {
        let text = """
            routes:
              /api:
                origin: http://127.0.0.1:9
                "origin": http://127.0.0.1:8
              /api:
                origin: http://127.0.0.1:7
            host: 127.0.0.1
            host: 0.0.0.0
            host: ::1

            """
        let (path, lines) = try await ConfigFixture.problems(text)
        #expect(lines == [
            "\(path):4: origin: given again (first on line 3); a key is given once in its mapping",
            "\(path):5: /api: given again (first on line 2); a key is given once in its mapping",
            "\(path):8: host: given again (first on line 7); a key is given once in its mapping",
            "\(path):9: host: given again (first on line 7); a key is given once in its mapping",
        ], "\(lines.joined(separator: "\n"))")
        // Several keys of one mapping, quoted or spaced before the colon, are found together.
        let (other, again) = try await ConfigFixture.problems(
            "routes:\n  /a:\n    origin: http://o:1\n    via: true\n    origin: http://o:2\n    via: false\n  \"/a\" :\n    origin: http://o:3\n")
        #expect(again == [
            "\(other):5: origin: given again (first on line 3); a key is given once in its mapping",
            "\(other):6: via: given again (first on line 4); a key is given once in its mapping",
            "\(other):7: /a: given again (first on line 2); a key is given once in its mapping",
        ], "\(again.joined(separator: "\n"))")
        // Thousands of them make one screen of problems, found in a few compositions of the file.
        let many = "routes:\n" + (0..<3000).map { "  /r\($0 % 1000):\n    origin: http://o:1\n" }.joined()
        let (_, every) = try await ConfigFixture.problems(many)
        let screen = ConfigurationError(problems: every).shown
        #expect(every.count == 2000, "\(every.suffix(2))")
        #expect(screen.count == ConfigurationError.shownProblems + 1
                && screen.last == "… and 1980 more problems (larder check-config lists them all)", "\(screen.suffix(2))")
        // In a flow mapping the key given again has no line of its own: the first one's line, and nothing more.
        let (flowPath, flow) = try await ConfigFixture.problems("port: 1\nroutes: {/a: {origin: http://o:1, origin: http://o:2}}\n")
        #expect(flow == ["\(flowPath):2: origin: given more than once in its mapping"], "\(flow)")
    }

    /// Problems from the environment come first (they have no line), then the file's in line order.
    @Test func theEnvironmentsProblemsComeBeforeTheFilesLines() async throws {
        let (path, lines) = try await ConfigFixture.problems("weather-ttl: soon\nroutes:\n  /metrics:\n    origin: http://o:1\nport: x\n",
                                                               environment: ["LARDER_LOG_FORMAT": "xml"])
        #expect(lines.count == 4, "\(lines)")
        #expect(lines.first == "--log-format (LARDER_LOG_FORMAT) must be text or json, got 'xml'")
        #expect(lines.dropFirst().map { $0.dropFirst(path.count + 1).prefix(2) } == ["1:", "3:", "5:"], "\(lines)")
    }

    /// Settings that cannot go together are refused: a route's strip-prefix with its
    /// replace-prefix (whatever their values), a part's nested member in `fields`.
    @Test func settingsThatCannotGoTogetherAreRefused() async throws {
        let text = """
            routes:
              /api:
                replace-prefix: /v2
                origin: http://127.0.0.1:9
                strip-prefix: false
            aggregates:
              /dash:
                parts:
                  rates: {target: /api/rates, pointer: /data, fields: [EUR, rates.usd.buy]}

            """
        let (path, lines) = try await ConfigFixture.problems(text)
        #expect(lines == [
            "\(path):5: routes./api.strip-prefix: cannot go with replace-prefix (line 3): each says what becomes of the prefix; give strip-prefix or replace-prefix, not both",
            "\(path):9: aggregates./dash.parts.rates: fields name members of the object kept: 'rates.usd.buy' would select nothing; point at its object and name the member (pointer: /data/rates/usd, fields: [buy])",
        ], "\(lines.joined(separator: "\n"))")
        // Each alone is taken.
        let alone = "routes:\n  /api:\n    origin: http://127.0.0.1:9\n    replace-prefix: /v2\n"
            + "aggregates:\n  /dash:\n    parts:\n      rates: {target: /api/rates, pointer: /rates, fields: [USD]}\n"
        let settings = try ServeSettings.resolve(flags: [:], environment: [:], file: try await ConfigFile.load(path: ConfigFixture.file(alone)))
        #expect(settings.routes.first?.rules.prefixReplacement == "/v2")
        #expect(settings.aggregates.first?.parts.first?.fields == ["USD"])
    }

    /// A list naming value files: once one is refused the list's later ones are not read, so
    /// a file naming `/dev/zero` thousands of times is checked in moments; a block scalar
    /// item is a field per line; an alias is reported where it is used; a name is quoted safely.
    @Test func valueFilesAliasesAndBlockItemsInLists() async throws {
        let zeros = String(repeating: "  - \"X-Z: @/dev/zero\"\n", count: 20_000)
        let began = ContinuousClock.now
        let (path, lines) = try await ConfigFixture.problems("weather-headers:\n" + zeros + "  - no colon\n")
        #expect(ContinuousClock.now - began < .seconds(10), "one refused value file is read, not 20,000")
        #expect(lines.count == 2 && lines[0].hasPrefix("\(path):2: weather-headers must be 'Name: value' or 'Name: @/path': the value file for X-Z")
                && lines[1] == "\(path):20002: weather-headers must be 'Name: value' or 'Name: @/path': an item has no ':' (write Name: value)",
                "\(lines.prefix(3))")

        // Across routes too: 2,000 routes naming it give one problem, at the first.
        let routes = (0..<2000).map { "  /r\($0):\n    origin: http://127.0.0.1:9\n    set-fields: [\"X-Z: @/dev/zero\"]\n" }.joined()
        let (routed, refused) = try await ConfigFixture.problems("routes:\n" + routes)
        #expect(refused.count == 1 && refused.first?.hasPrefix("\(routed):4: routes./r0.set-fields: must be") == true, "\(refused.prefix(2))")
        #expect(ContinuousClock.now - began < .seconds(20), "two refused value files are read, not 22,000")

        let text = """
            routes:
              /api:
                origin: http://127.0.0.1:9
                remove-fields: &names [Cookie, Authorization]
                set-fields:
                  - |
                    X-A: one
                    X-B: two
                  - "X\\e[31m: red"
              /b:
                origin: http://127.0.0.1:9
                override: *names

            """
        let (other, problems) = try await ConfigFixture.problems(text)
        #expect(problems == [
            "\(other):9: routes./api.set-fields: must be 'Name: value' or 'Name: @/path': 'X?[31m' is not a field name",
            "\(other):12: routes./b.override: 'Cookie' is not something Larder can ignore (no-cache, private, set-cookie)",
            "\(other):12: routes./b.override: 'Authorization' is not something Larder can ignore (no-cache, private, set-cookie)",
        ], "\(problems.joined(separator: "\n"))")
        let good = try await ConfigFile.load(path: ConfigFixture.file(text.replacingOccurrences(of: "X\\e[31m: red", with: "X-C: three")
            .replacingOccurrences(of: "override: *names", with: "remove-fields: *names")))
        let settings = try ServeSettings.resolve(flags: [:], environment: [:], file: good)
        #expect(settings.routes.first?.rules.setFields.map(\.name) == ["X-A", "X-B", "X-C"])
        #expect(settings.routes.last?.rules.removeFields == ["Cookie", "Authorization"])
    }

    /// A value file is read, checked and held once for the whole file, routes and header lists
    /// alike: a FIFO that gives its value once serves both; a large one named thousands of times
    /// is checked once; value files spelled many ways stop at 1 MiB together.
    @Test func valueFilesAreReadOnceAndBoundedTogether() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("larder-values-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let fifo = folder + "/once"
        #expect(mkfifo(fifo, 0o600) == 0)
        // Written once before Larder reads: a read end held open keeps the bytes in the pipe,
        // and the writer gone, a second read would find nothing.
        let holder = open(fifo, O_RDONLY | O_NONBLOCK)
        defer { close(holder) }
        let writer = open(fifo, O_WRONLY | O_NONBLOCK)
        #expect(holder >= 0 && writer >= 0)
        _ = "fifo-secret\n".withCString { write(writer, $0, 12) }
        close(writer)
        let once = try await ConfigFile.load(path: ConfigFixture.file(
            "weather-headers: [\"X-W: @\(fifo)\"]\nroutes:\n  /r:\n    origin: http://127.0.0.1:9\n    set-fields: [\"X-A: @\(fifo)\"]\n"))
        let settings = try ServeSettings.resolve(flags: [:], environment: [:], file: once)
        #expect(settings.weatherHeaders.map(\.value) == ["fifo-secret"])
        #expect(settings.routes.first?.rules.setFields.map(\.value) == ["fifo-secret"])

        let large = folder + "/large"
        try Data(repeating: UInt8(ascii: "a"), count: 1_000_000).write(to: URL(fileURLWithPath: large))
        let began = ContinuousClock.now
        let named = (0..<5000).map { "  - \"X-\($0): @\(large)\"\n" }.joined()
        let (_, none) = try await ConfigFixture.problems("weather-headers:\n" + named)
        #expect(none.isEmpty, "\(none.prefix(2))")
        let spelled = (0..<50).map { "  - \"X-\($0): @\(folder)/\(String(repeating: "./", count: $0))large\"\n" }.joined()
        let (path, over) = try await ConfigFixture.problems("balance-headers:\n" + spelled)
        #expect(over.count == 1 && over.first?.hasPrefix("\(path):3: balance-headers must be 'Name: value' or 'Name: @/path': "
                                                      + "the value file for X-1 (") == true
                && over.first?.contains("): would take the configuration's value files past 1 MiB") == true,
                "\(over.prefix(2))")
        #expect(ContinuousClock.now - began < .seconds(10), "a value file is checked once, not 5,000 times")
    }

    /// A line that continues a value (white space first) is not a field of its own, and an
    /// alias below its anchor in one list is reported at the list's key.
    @Test func aContinuedLineAndAnAliasBelowItsAnchor() async throws {
        let text = """
            balance-headers:
              - |
                Authorization: Bearer
                  part-of-a-secret:s3cret
            weather-headers:
              - &bad "Bad Name: v"
              - "X-B: v"
              - *bad

            """
        let (path, lines) = try await ConfigFixture.problems(text)
        #expect(lines == [
            "\(path):2: balance-headers must be 'Name: value' or 'Name: @/path': a line is indented more than the item's first, as a value continued from the line before; write each field on one line",
            "\(path):5: weather-headers must be 'Name: value' or 'Name: @/path': 'Bad Name' is not a field name",
            "\(path):6: weather-headers must be 'Name: value' or 'Name: @/path': 'Bad Name' is not a field name",
        ], "\(lines.joined(separator: "\n"))")
        #expect(!lines.joined().contains("s3cret") && !lines.joined().contains("part-of"))
        // Lines indented alike are fields each, and so are flags (or a variable's lines),
        // however indented: no flag continues another.
        let alike = try await ConfigFile.load(path: ConfigFixture.file("weather-headers: [\"  X-A: 1\\n  X-B: 2\"]\n"))
        #expect(try ServeSettings.resolve(flags: [:], environment: [:], file: alike).weatherHeaders.map(\.name) == ["X-A", "X-B"])
        let flags = try ServeSettings.resolve(flags: ["weather.headers": "X-A: 1\n  X-B: 2"], environment: [:])
        #expect(flags.weatherHeaders.map(\.name) == ["X-A", "X-B"])
    }

    /// A file saved with a byte order mark, as some editors save UTF-8, reads as without it.
    @Test func aByteOrderMarkIsNotPartOfTheFile() async throws {
        let marked = try await ConfigFile.load(path: ConfigFixture.file("\u{FEFF}port: 8081\nhost: 0.0.0.0\n"))
        #expect(try ServeSettings.resolve(flags: [:], environment: [:], file: marked).port == 8081)
    }

    /// The command prints them as they are, one a line, and exits 2: every one of them,
    /// where `serve` prints the first screen and says how many more there are.
    @Test func checkConfigPrintsEveryProblemInLineOrder() async throws {
        let path = try ConfigFixture.file(Self.several)
        let checked = try LarderProcess(["check-config", path])
        #expect(await checked.waitForExit() == 2)
        #expect(checked.errorOutput == Self.expected.map { "larder: \(path):\($0)\n" }.joined(), "\(checked.errorOutput)")

        let unknown = try ConfigFixture.file((1...30).map { "unknown-\($0): 1\n" }.joined())
        let every = try LarderProcess(["check-config", unknown])
        #expect(await every.waitForExit() == 2)
        let lines = every.errorOutput.split(separator: "\n")
        #expect(lines.count == 30 && lines.last == "larder: \(unknown):30: unknown-30: not a setting Larder knows", "\(lines.suffix(2))")
        let served = try LarderProcess(["serve", "--port", "0", "--config", unknown])
        #expect(await served.waitForExit() == 2)
        let screen = served.errorOutput.split(separator: "\n")
        #expect(screen.count == ConfigurationError.shownProblems + 1
                && screen.last == "larder: … and 10 more problems (larder check-config lists them all)", "\(screen.suffix(2))")
    }

    /// A list's items are each checked, each problem at the item's own line: the file's header
    /// lists, a route's field lists and overrides, a part's fields.
    @Test func eachItemOfAListIsReportedAtItsOwnLine() async throws {
        let text = """
            weather-headers:
              - "X-Key: 1"
              - no colon
              - "Bad Name: 2"
            routes:
              /api:
                origin: http://127.0.0.1:9
                remove-fields:
                  - Cookie
                  - "a b"
                  - "c d"
                override: [no-cache,
                  sometimes]
                set-fields:
                  - "X-Ok: 1"
                  - [nested]
            aggregates:
              /dash:
                parts:
                  rates:
                    target: /api/rates
                    fields:
                      - rates.USD
                      - EUR
                      - rates.GBP

            """
        let (path, lines) = try await ConfigFixture.problems(text)
        let nested = { (member: String) in
            "aggregates./dash.parts.rates: fields name members of the object kept: 'rates.\(member)' would select nothing; "
                + "point at its object and name the member (pointer: /rates, fields: [\(member)])"
        }
        #expect(lines == [
            "3: weather-headers must be 'Name: value' or 'Name: @/path': an item has no ':' (write Name: value)",
            "4: weather-headers must be 'Name: value' or 'Name: @/path': 'Bad Name' is not a field name",
            "10: routes./api.remove-fields: 'a b' is not a field name",
            "11: routes./api.remove-fields: 'c d' is not a field name",
            "13: routes./api.override: 'sometimes' is not something Larder can ignore (no-cache, private, set-cookie)",
            "16: routes./api.set-fields: must be a list of text values; this item is not text",
            "23: \(nested("USD"))",
            "25: \(nested("GBP"))",
        ].map { "\(path):\($0)" }, "\(lines.joined(separator: "\n"))")
        // Good items alone are read in their order.
        let good = try await ConfigFile.load(path: ConfigFixture.file("weather-headers:\n  - \"X-A: 1\"\n  - \"X-B: 2\"\n"))
        let settings = try ServeSettings.resolve(flags: [:], environment: [:], file: good)
        #expect(settings.weatherHeaders.map(\.name) == ["X-A", "X-B"])
    }
}
