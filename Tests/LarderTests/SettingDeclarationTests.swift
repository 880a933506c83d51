import Logging
import Foundation
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// Each setting is declared once (`ServeSettings.declarations`); its names, `serve`'s options,
/// the README's table, the example file and the restart-only list follow from it.
@Suite(.timeLimit(.minutes(1))) struct SettingDeclarationTests {
    static var declarations: [SettingDeclaration] { ServeSettings.declarations }

    @Test func flagsVariablesAndFileKeysFollowFromTheKey() throws {
        let byKey = Dictionary(uniqueKeysWithValues: Self.declarations.map { ($0.key, $0) })
        let cacheDir = try #require(byKey["cache.dir"])
        #expect(cacheDir.flag == "--cache-dir" && cacheDir.variable == "LARDER_CACHE_DIR" && cacheDir.fileKey == "cache-dir")
        #expect(cacheDir.propertyName == "cacheDir")
        let routes = try #require(byKey["routes"])
        #expect(routes.flag == "--route" && routes.variable == "LARDER_ROUTES" && routes.fileKey == "routes" && routes.propertyName == "route")
        let headers = try #require(byKey["weather.headers"])
        #expect(headers.flag == "--weather-header" && headers.variable == "LARDER_WEATHER_HEADERS" && headers.secret)
        #expect(byKey["unused.connections.per.client"]?.variable == "LARDER_UNUSED_CONNECTIONS_PER_CLIENT")
        // Every name is some one setting's.
        for names in [Self.declarations.map(\.flag), Self.declarations.map(\.variable), Self.declarations.map(\.fileKey)] {
            #expect(Set(names).count == Self.declarations.count, "\(names)")
        }
        #expect(ServeSettings.fileKeys == Set(Self.declarations.map(\.fileKey)))
    }

    /// A value a setting refuses is named by its flag and variable, with the words its
    /// declaration gives (its range among them).
    @Test(arguments: [("port", "70000", "a whole number from 0 to 65535"), ("max.request.body", "2GiB", "a size from 1B to 1GiB"),
                      ("max.object.size", "1B", "a size from 1KiB to 1GiB"), ("redis.timeout", "20s", "a duration from 1ms to 10s"),
                      ("upstream.backoff", "0", "a duration from 1s to 60s"), ("upstream.concurrency", "0", "a whole number from 1 to 1024")])
    func aRefusedValueNamesItsFlagAndTheDeclaredRange(_ key: String, _ value: String, _ expects: String) throws {
        let declaration = try #require(Self.declarations.first { $0.key == key })
        #expect(declaration.expects == expects)
        #expect {
            try ServeSettings.resolve(flags: [:], environment: [declaration.variable: value])
        } throws: { error in
            (error as? ConfigurationError)?.problems == ["\(declaration.flag) (\(declaration.variable)) must be \(expects), got '\(value)'"]
        }
    }

    /// The README's table has a row per setting, with its flag, variable and default.
    @Test func theReadmesTableFollowsTheDeclarations() throws {
        let readme = try String(contentsOfFile: ConfigFileTests.root.appendingPathComponent("README.md").path, encoding: .utf8)
        var rows: [String: (variable: String, default: String)] = [:]
        for line in readme.split(separator: "\n") {
            guard let row = line.firstMatch(of: /^\| `(--[a-z-]+)[^`]*` \| `([A-Z_]+)`([^|]*)\| ([^|]+) \|/) else { continue }
            let note = row.3.trimmingCharacters(in: .whitespaces)
            rows[String(row.1)] = (String(row.2) + (note.isEmpty ? "" : " " + note), String(row.4))
        }
        #expect(Set(rows.keys) == Set(Self.declarations.map(\.flag) + ["--config"]))
        for declaration in Self.declarations {
            let row = try #require(rows[declaration.flag], "\(declaration.flag)")
            let listing = switch declaration.shape {
            case .list(let separator): separator == "," ? " (comma list)" : " (one per line)"
            default: ""
            }
            #expect(row.variable == declaration.variable + listing, "\(declaration.key)")
            switch declaration.default {
            case .value(let value): #expect(row.default == "`\(value)`", "\(declaration.key)")
            case .unset(let meaning): #expect(row.default == meaning, "\(declaration.key)")
            }
        }
    }

    /// The example file names every setting: set to its default, or commented out (a setting
    /// without a default, or one whose being given matters, as the weather URL's does with `demo`).
    @Test func theExampleFileFollowsTheDeclarations() throws {
        let example = try String(contentsOfFile: ConfigFileTests.example, encoding: .utf8)
        let values = try ConfigFile.shape(of: example, path: ConfigFileTests.example).scalars
        let named = Set(example.split(separator: "\n").compactMap { line in
            line.firstMatch(of: /^(?:# )?([a-z][a-z-]*):/).map { String($0.1) }
        })
        #expect(named == Set(Self.declarations.map(\.fileKey) + ["aggregates"]))
        for declaration in Self.declarations {
            guard let value = values[declaration.fileKey] else { continue }
            guard case .value(let text) = declaration.default else {
                Issue.record("\(declaration.fileKey) has no default but the example sets it")
                continue
            }
            #expect(value == text, "\(declaration.fileKey)")
        }
    }

    /// `serve`'s options are the declarations' flags, each with the declaration's help.
    @Test func serveHasAnOptionForEachDeclarationAndNoOther() async throws {
        let help = try LarderProcess(["serve", "--experimental-dump-help"])
        #expect(await help.waitForExit() == 0, "\(help.errorOutput)")
        let dump = try #require(try JSONSerialization.jsonObject(with: Data(help.output.utf8)) as? [String: Any])
        let command = try #require(dump["command"] as? [String: Any])
        let arguments = try #require(command["arguments"] as? [[String: Any]])
        var options: [String: String] = [:]
        for argument in arguments {
            let names = argument["names"] as? [[String: Any]] ?? []
            guard let long = names.first(where: { $0["kind"] as? String == "long" })?["name"] as? String else { continue }
            options["--" + long] = argument["abstract"] as? String ?? ""
        }
        #expect(Set(options.keys) == Set(Self.declarations.map(\.flag) + ["--config", "--help", "--version"]))
        for declaration in Self.declarations {
            #expect(options[declaration.flag] == declaration.helpText, "\(declaration.flag)")
        }
    }

    /// The flags given reach the settings under their keys, a list's items joined as its variable joins them.
    @Test func serveGivesEachFlagToItsSetting() async throws {
        let bad = try LarderProcess(["serve", "--port", "70000", "--unused-connections-per-client", "0", "--weather-header", "NoColon",
                                     "--route", "/a=http://127.0.0.1:9", "--route", "/a=http://127.0.0.1:8"])
        #expect(await bad.waitForExit() == 2)
        #expect(bad.errorOutput.contains("--unused-connections-per-client (LARDER_UNUSED_CONNECTIONS_PER_CLIENT) must be a whole number from 1 to 100000"),
                "\(bad.errorOutput)")
        #expect(bad.errorOutput.contains("--weather-header (LARDER_WEATHER_HEADERS) must be 'Name: value'"), "\(bad.errorOutput)")
        #expect(bad.errorOutput.contains("--port (LARDER_PORT) must be a whole number from 0 to 65535, got '70000'"), "\(bad.errorOutput)")
        // Both routes arrived: the second repeats the first's prefix.
        #expect(bad.errorOutput.contains("the prefix /a is given twice"), "\(bad.errorOutput)")
    }

    /// The settings a reload cannot apply are those declared so, named by their file keys.
    @Test func theRestartOnlyListFollowsTheDeclarations() throws {
        let running = ServeSettings()
        var read = running
        read.host = "0.0.0.0"
        read.adminToken = "other"
        read.redisPrefix = "other:"
        read.weatherTTL = .seconds(1)
        read.maxObjectSize = 4096
        let (kept, restart) = read.keepingRestartOnly(from: running)
        #expect(restart == ["host", "admin-token-file", "redis-prefix"])
        #expect(kept.host == running.host && kept.adminToken == nil && kept.redisPrefix == running.redisPrefix)
        #expect(kept.weatherTTL == .seconds(1) && kept.maxObjectSize == 4096)
        let restartOnly = Self.declarations.filter(\.needsRestart).map(\.fileKey)
        #expect(restartOnly == ["host", "port", "cache-dir", "memory-limit", "disk-limit", "max-request-body", "event-loops",
                                "unused-connections-per-client", "ca-file", "log-level", "log-format", "tracing-endpoint",
                                "tracing-sample-ratio", "admin-port", "admin-host",
                                "admin-token-file", "redis-url", "redis-timeout", "redis-prefix", "demo", "built-in-routes"])
    }

    /// The `settings in use` line has a field for each setting that is not a secret.
    @Test func theSummaryShowsEverySettingButTheSecretOnes() throws {
        let summary = try ServeSettings.resolve(flags: ["redis.url": "redis://:hunter2@r:6379"], environment: [:]).summary
        #expect(summary["unused_connections_per_client"] == .stringConvertible(64))
        #expect(summary["weather_ttl_s"] == .stringConvertible(600.0))
        #expect(summary["host"] == "127.0.0.1" && summary["admin"] == "off" && summary["redis_prefix"] == "larder:")
        #expect(summary["admin_host"] == nil && summary["admin_token_file"] == nil)
        #expect(!"\(summary)".contains("hunter2"))
    }
}
