import Foundation
import Testing
import TestSupport
@testable import Settings

/// A configuration path may be a symbolic link to any file, and its problems reach the log
/// and the admin API: they name what is wrong without quoting long or binary content.
@Suite(.timeLimit(.minutes(1))) struct ConfigFileQuotingTests {
    /// Lines as a password file holds them: each ends in `:`, so YAML reads it as a key.
    static let hash = ConfigFixture.shadowHash
    static let shadow = ConfigFixture.shadow

    /// The problems of the file a symbolic link points to.
    static func problemsThroughLink(to text: String) async throws -> [String] {
        let target = try ConfigFixture.file(text, name: "shadow")
        let link = URL(fileURLWithPath: target).deletingLastPathComponent().appendingPathComponent("larder.yaml").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        do {
            _ = try ServeSettings.resolve(flags: [:], environment: [:], file: try await ConfigFile.load(path: link))
            return []
        } catch {
            return error.problems
        }
    }

    @Test func aPasswordFileBehindALinkIsRefusedWithoutItsLines() async throws {
        let lines = try await Self.problemsThroughLink(to: Self.shadow)
        #expect(!lines.isEmpty)
        let all = lines.joined(separator: "\n")
        #expect(!all.contains("$6$") && !all.contains("h4sh") && !all.contains("root:"), "\(all)")
        #expect(all.contains(":1: a key of ") && all.contains("not a setting Larder knows"), "\(all)")
    }

    @Test func aBinaryFileIsRefusedWithoutQuotingAnyOfIt() async throws {
        var withNul = try await Self.problemsThroughLink(to: "secret-key: s3cr3t\u{0}more: stuff\n")
        #expect(withNul.count == 1 && withNul[0].hasSuffix("not a YAML or JSON file: it holds NUL bytes (binary content is never quoted)"),
                "\(withNul)")
        #expect(!withNul[0].contains("s3cr3t"))
        let target = try ConfigFixture.file("", name: "blob")
        try Data([0x73, 0x65, 0x63, 0x72, 0x65, 0x74, 0x3A, 0x20, 0xFF, 0xFE, 0x0A]).write(to: URL(fileURLWithPath: target))
        do {
            _ = try await ConfigFile.load(path: target)
            withNul = []
        } catch {
            withNul = error.problems
        }
        #expect(withNul == ["\(target): not a YAML or JSON file: it is not UTF-8 text (binary content is never quoted)"])
    }

    /// A mistyped name is still quoted whole; anything long is cut; control characters are not written.
    @Test func whatIsQuotedIsShortAndVisible() async throws {
        var (path, lines) = try await ConfigFixture.problems("memory-limt: 64MiB\n")
        #expect(lines == ["\(path):1: memory-limt: not a setting Larder knows"])
        let long = String(repeating: "k", count: 1000)
        (path, lines) = try await ConfigFixture.problems("\(long): 1\nroutes:\n  /\(long):\n    origin: http://a:1\n    \(long): 2\n")
        #expect(lines.count == 2, "\(lines)")
        #expect(lines.allSatisfy { $0.utf8.count < 300 }, "\(lines)")
        #expect(lines.first == "\(path):1: a key of 1000 bytes that is no setting's name (not quoted): not a setting Larder knows")
        #expect(lines.last?.hasPrefix("\(path):5: routes./kkkk") == true && lines.last?.contains("… (") == true, "\(lines)")
        (path, lines) = try await ConfigFixture.problems("port: \"\(long)\"\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("\(path):1: port must be") && lines[0].hasSuffix("… (1000 bytes)'"), "\(lines)")
        (path, lines) = try await ConfigFixture.problems("port: \"8\\e[31m0\\u0007\"\n")
        #expect(lines.count == 1 && lines[0].hasSuffix("got '8?[31m0?'"), "\(lines)")
    }

    @Test func thousandsOfUnknownKeysMakeOneScreenOfProblems() async throws {
        let text = (0..<5000).map { "unknown-\($0): 1\n" }.joined()
        let (_, lines) = try await ConfigFixture.problems(text)
        #expect(lines.count == 5000)
        let screen = ConfigurationError(problems: lines).shown
        #expect(screen.count == ConfigurationError.shownProblems + 1)
        #expect(screen.last == "… and \(5000 - ConfigurationError.shownProblems) more problems (larder check-config lists them all)")
    }
}
