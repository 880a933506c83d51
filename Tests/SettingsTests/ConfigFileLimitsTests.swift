#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import Settings
import TestSupport

/// A configuration file is bounded in what Larder reads of it (a path may name a huge file,
/// `/dev/zero` or a FIFO), and its routes are checked in n log n time, so a reload of a
/// large or hostile file neither eats memory nor stalls.
@Suite(.timeLimit(.minutes(2))) struct ConfigFileLimitsTests {
    static let limit = 1 << 20

    /// The problems loading and resolving `path` gives (none: empty).
    static func problems(_ path: String) async -> [String] {
        do {
            _ = try ServeSettings.resolve(flags: [:], environment: [:], file: try await ConfigFile.load(path: path))
            return []
        } catch {
            return error.problems
        }
    }

    /// A valid file of exactly `size` bytes: one setting and a comment filling the rest.
    static func padded(to size: Int) throws -> String {
        let head = "port: 8080\n#"
        return try ConfigFixture.file(head + String(repeating: "x", count: size - head.utf8.count - 1) + "\n")
    }

    /// A new FIFO's path.
    static func fifo() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("larder-fifo-\(UUID().uuidString)").path
        try #require(mkfifo(path, 0o600) == 0)
        return path
    }

    /// How many of this process's descriptors have `path` open.
    static func descriptors(naming path: String) -> Int {
        let real = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return names.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) == real }.count
    }

    @Test func aFileAtTheLimitIsReadAndOneBytePastItIsRefused() async throws {
        #expect(await Self.problems(try Self.padded(to: Self.limit)) == [])
        let past = try Self.padded(to: Self.limit + 1)
        let problems = await Self.problems(past)
        #expect(problems.count == 1)
        #expect(problems.first?.hasPrefix(past + ": ") == true)
        #expect(problems.first?.contains("larger than 1 MiB") == true, "\(problems)")
    }

    @Test func devZeroIsRefusedPromptly() async throws {
        let started = ContinuousClock.now
        let problems = await Self.problems("/dev/zero")
        #expect(problems.first?.contains("larger than 1 MiB") == true, "\(problems)")
        // Unbounded, the read never ends; bounded, it is 1 MiB (5.6 s once in a loaded full run).
        #expect(ContinuousClock.now - started < .seconds(30))
    }

    @Test func aFIFOWhoseWriterSendsNothingIsRefusedPromptly() async throws {
        let path = try Self.fifo()
        defer { unlink(path) }
        let writer = open(path, O_RDWR | O_NONBLOCK)  // a writer that never writes
        #expect(writer >= 0)
        defer { close(writer) }
        let started = ContinuousClock.now
        let problems = await Self.problems(path)
        #expect(problems.first?.contains("did not arrive") == true, "\(problems)")
        #expect(ContinuousClock.now - started < .seconds(15))
    }

    @Test func aFIFOWithoutAWriterIsRefusedNotReadAsEmpty() async throws {
        let path = try Self.fifo()
        defer { unlink(path) }
        let problems = await Self.problems(path)
        #expect(problems.first?.contains("a FIFO nothing was written to") == true, "\(problems)")
    }

    @Test func aFIFOWhoseWriterSendsAFileIsRead() async throws {
        let path = try Self.fifo()
        defer { unlink(path) }
        let writer = open(path, O_RDWR | O_NONBLOCK)
        #expect(writer >= 0)
        let text = "port: 9999\n"
        #expect(write(writer, text, text.utf8.count) == text.utf8.count)
        let reading = Task { try await ConfigFile.load(path: path) }
        // The end of the file, once Larder holds the FIFO open: closed before, the last
        // descriptor would take the bytes with it (a loaded run starts the task late).
        #expect(await eventually(timeout: .seconds(30)) { Self.descriptors(naming: path) == 2 })
        close(writer)
        let settings = try ServeSettings.resolve(flags: [:], environment: [:], file: try await reading.value)
        #expect(settings.port == 9999)
    }

    @Test func twentyThousandRoutesAreCheckedQuickly() async throws {
        var text = "routes:\n"
        for index in 0..<20_000 { text += "  /r\(index):\n    origin: http://origin-\(index % 7):8000\n" }
        let path = try ConfigFixture.file(text)
        let started = ContinuousClock.now
        let settings = try ServeSettings.resolve(flags: [:], environment: [:], file: try await ConfigFile.load(path: path))
        let took = ContinuousClock.now - started
        #expect(settings.routes.count == 20_000)
        // Quadratic, they took 13.6–18.2 s alone; linear, 2.1 s alone and 7.5 s in a full run.
        #expect(took < .seconds(12), "20,000 routes took \(took)")
    }
}

/// `RouteMount.Prefixes` answers as trying every route's `covers` would.
@Suite struct RoutePrefixesTests {
    @Test func anyCoverAgreesWithTryingEachRoute() {
        let mounts = ["/api", "/static/", "/a/b", "/caf\u{E9}"].map { RouteMount(prefix: $0, origin: "http://o:1")! }
        let prefixes = RouteMount.Prefixes(mounts)
        for path in ["/api", "/api/x", "/apix", "/static/", "/static/x", "/static", "/a", "/a/b", "/a/b/c", "/a/bc", "/",
                     "/cafe\u{301}", "/caf\u{E9}/x", "/x/api"] {
            #expect(prefixes.coverAny(path) == mounts.contains { $0.covers(path[...]) }, "\(path)")
        }
    }
}
