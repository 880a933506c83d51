import HTTPCore
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import TestSupport
@testable import Settings
import CacheVocabulary

/// A configuration file (`--config`) holds every setting under its flag's name; flags and
/// environment win over it; each problem is refused with the file's line.
@Suite(.timeLimit(.minutes(1))) struct ConfigFileTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let example = root.appendingPathComponent("deploy/larder.example.yaml").path


    @Test func theExampleFileGivesTheDefaults() async throws {
        let settings = try ServeSettings.resolve(flags: [:], environment: [:], file: try await ConfigFile.load(path: Self.example))
        #expect(settings == ServeSettings())
    }

    /// Every setting is in the example (set, or commented out where it has no default), and
    /// the README's table lists the same options: the three cannot drift apart.
    @Test func theExampleTheSettingsAndTheReadmeNameTheSameKeys() throws {
        let example = try String(contentsOfFile: Self.example, encoding: .utf8)
        let inExample = Set(example.split(separator: "\n").compactMap { line in
            line.firstMatch(of: /^(?:# )?([a-z][a-z-]*):/).map { String($0.1) }
        })
        // `aggregates` is the file's only: no flag or variable declares one.
        #expect(inExample == ServeSettings.fileKeys.union(["aggregates"]))
        let readme = try String(contentsOfFile: Self.root.appendingPathComponent("README.md").path, encoding: .utf8)
        var inReadme = Set(readme.split(separator: "\n").compactMap { line in
            line.firstMatch(of: /^\| `--([a-z-]+)/).map { String($0.1) }
        })
        // The table's rows for lists are singular, as their flags are; `config` names the file itself.
        inReadme = Set(inReadme.map { ["route", "weather-header", "balance-header"].contains($0) ? $0 + "s" : $0 })
        #expect(inReadme == ServeSettings.fileKeys.union(["config"]))
    }

    /// The README's gateway-only file is a working configuration: two routes, no built-in ones.
    @Test func theReadmesGatewayFileGivesTwoRoutesAndNoBuiltInOnes() async throws {
        let readme = try String(contentsOfFile: Self.root.appendingPathComponent("README.md").path, encoding: .utf8)
        let after = try #require(readme.range(of: "A gateway only")).upperBound
        let block = try #require(readme[after...].firstMatch(of: /```yaml\n((?:.|\n)*?)```/))
        let settings = try ServeSettings.resolve(flags: [:], environment: [:], file: try await ConfigFile.load(path: ConfigFixture.file(String(block.1))))
        #expect(settings.builtInRoutes.isEmpty)
        #expect(settings.routes.map(\.prefix) == ["/orders", "/catalog"])
        #expect(settings.routes.allSatisfy { $0.caching.clientRefresh == .ignore })
    }

    @Test func flagsWinOverTheEnvironmentAndBothOverTheFile() async throws {
        let path = try ConfigFixture.file("port: 9001\nweather-ttl: 90s\nmemory-limit: 8MiB\nweather-headers:\n  - \"X-Key: a,b\"\n  - \"X-Other: c\"\n")
        let config = try await ConfigFile.load(path: path)
        let settings = try ServeSettings.resolve(flags: ["port": "9003"], environment: ["LARDER_PORT": "9002", "LARDER_WEATHER_TTL": "2m"],
                                                 file: config)
        #expect(settings.port == 9003)
        #expect(settings.weatherTTL == .seconds(120))
        #expect(settings.memoryLimit == 8 << 20)
        // A list's items stay whole: a header value may hold a comma.
        #expect(settings.weatherHeaders["x-key"] == "a,b" && settings.weatherHeaders["x-other"] == "c")
    }

    @Test func jsonIsReadToo() async throws {
        let path = try ConfigFixture.file(#"{"port": 9004, "demo": true, "routes": {"/api": {"origin": "http://127.0.0.1:1"}}}"#, name: "larder.json")
        let settings = try ServeSettings.resolve(flags: [:], environment: [:], file: try await ConfigFile.load(path: path))
        #expect(settings.port == 9004 && settings.demo)
        #expect(settings.routes.map(\.description) == ["/api=http://127.0.0.1:1"])
    }

    /// Each class of bad file names its line and key; every problem is listed, not just the first.
    @Test func eachProblemGivesItsLine() async throws {
        var (path, lines) = try await ConfigFixture.problems("port: 8080\ncache-dir: a: b\nlog-level: info\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("\(path):2: the file is not valid YAML or JSON"), "\(lines)")
        (path, lines) = try await ConfigFixture.problems("port: 8080\nmemory-limt: 64MiB\nweather-ttl: soon\n")
        #expect(lines == ["\(path):2: memory-limt: not a setting Larder knows",
                          "\(path):3: weather-ttl must be a duration (seconds, or with us, ms, s, m, h), got 'soon'"])
        (path, lines) = try await ConfigFixture.problems("port: 8080\nweather-ttl: soon\nupstream-timeout: 0\n")
        #expect(lines == ["\(path):2: weather-ttl must be a duration (seconds, or with us, ms, s, m, h), got 'soon'",
                          "\(path):3: upstream-timeout must be a duration above zero, got '0'"])
        (path, lines) = try await ConfigFixture.problems("routes:\n  /api:\n    origin: http://a:1\n  /metrics:\n    origin: http://b:1\n  /x/../y:\n    origin: http://c:1\n")
        #expect(lines.count == 2, "\(lines)")
        #expect(lines.first?.hasPrefix("\(path):4: routes./metrics: /metrics=http://b:1: /metrics is a built-in path") == true, "\(lines)")
        #expect(lines.last?.hasPrefix("\(path):6: routes./x/../y:") == true, "\(lines)")
        (path, lines) = try await ConfigFixture.problems("routes:\n  /api:\n    origin: ftp://a\n    strip: true\n")
        #expect(lines == ["\(path):2: routes./api: must be a path starting with / and an http:// or https:// origin, got 'ftp://a'",
                          "\(path):4: routes./api.strip: not a route setting Larder knows"])
        (path, lines) = try await ConfigFixture.problems("routes:\n  /api: {}\n")
        #expect(lines == ["\(path):2: routes./api: needs an origin (an http:// or https:// URL)"])
        (path, lines) = try await ConfigFixture.problems("balance-headers:\n  - \"Authorization: @/nonexistent/token\"\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("\(path):2: balance-headers must be 'Name: value' or 'Name: @/path'"), "\(lines)")
        #expect(!lines[0].contains("Authorization: @"), "the value of a header is never repeated")
        (path, lines) = try await ConfigFixture.problems("port: [1, 2]\n")
        #expect(lines == ["\(path):1: port: must be a single value, not a list or mapping"])
    }

    @Test func aProblemFromTheEnvironmentNamesTheVariableNotTheFile() async throws {
        let (_, lines) = try await ConfigFixture.problems("port: 8080\n", environment: ["LARDER_WEATHER_TTL": "soon"])
        #expect(lines == ["--weather-ttl (LARDER_WEATHER_TTL) must be a duration (seconds, or with us, ms, s, m, h), got 'soon'"])
    }

    /// The shipped example, checked by the real command; a bad file exits 2 with one line per problem.
    @Test func checkConfigPrintsTheSettingsOrEveryProblem() async throws {
        let good = try LarderProcess(["check-config", Self.example])
        #expect(await good.waitForExit() == 0, "\(good.errorOutput)")
        #expect(good.output.contains("\(Self.example): ok") && good.output.contains("port: 8080"), "\(good.output)")
        let path = try ConfigFixture.file("port: 99999\nredis-url: redis://:hunter2@redis:6379\nlog-level: loud\n")
        let bad = try LarderProcess(["check-config", path])
        #expect(await bad.waitForExit() == 2)
        let lines = bad.errorOutput.split(separator: "\n")
        #expect(lines.count == 2, "\(bad.errorOutput)")
        #expect(lines.first?.hasPrefix("larder: \(path):1: port must be") == true)
        #expect(lines.last?.hasPrefix("larder: \(path):3: log-level must be") == true)
        let secret = try ConfigFixture.file("redis-url: redis://:hunter2@redis:6379\n")
        let redacted = try LarderProcess(["check-config", secret])
        #expect(await redacted.waitForExit() == 0)
        #expect(redacted.output.contains("redis: redis://:<redacted>@redis:6379") && !redacted.output.contains("hunter2"), "\(redacted.output)")
    }

    /// `serve --config` runs with the file's port and routes.
    @Test func serveUsesTheFile() async throws {
        let path = try ConfigFixture.file("port: 0\nlog-level: info\nroutes:\n  /api:\n    origin: http://127.0.0.1:9\n")
        let larder = try LarderProcess(["serve", "--config", path])
        _ = try await larder.waitForPort()
        // Logged after the listening line, so not always written yet when the port is read.
        #expect(await eventually { larder.output.contains("pass-through route /api -> http://127.0.0.1:9") }, "\(larder.output)")
        larder.signal(SIGTERM)
        #expect(await larder.waitForExit() == 0)
    }
}
