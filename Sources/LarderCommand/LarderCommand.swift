import ArgumentParser
import CLinux
import Foundation
import Larder
import Logging
import Observability
import Settings
import Simulator
import Upstream

/// The `larder` executable: argument parsing and wiring only.
@main
struct LarderCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "larder",
        abstract: "A caching HTTP service: built-in weather and balance routes, and an RFC 9111 gateway cache for any origin through pass-through routes (--route, or routes in --config).",
        version: Version.current,
        subcommands: [Serve.self, CheckConfig.self, UpstreamSim.self, HealthCheck.self],
        defaultSubcommand: Serve.self)

    /// Parses and runs; every usage or configuration error exits with status 2 and one line on stderr.
    static func main() async {
        MemoryReturn.configure()
        do {
            var command = try parseAsRoot()
            if var async = command as? AsyncParsableCommand {
                try await async.run()
            } else {
                try command.run()
            }
        } catch let error as ConfigurationError {
            fail(error.shown)
        } catch let exit as ExitCode {
            Foundation.exit(exit.rawValue)
        } catch {
            if exitCode(for: error) == .success { exit(withError: error) }
            fail(message(for: error))
        }
    }

    static func fail(_ message: String) -> Never {
        fail([message])
    }

    /// One line per problem on stderr, then exit status 2.
    static func fail(_ problems: [String]) -> Never {
        FileHandle.standardError.write(Data(problems.map { "larder: \($0)\n" }.joined().utf8))
        Foundation.exit(2)
    }
}

/// glibc raises its mmap threshold each time a large block is freed, until answers of a
/// few MiB come from the heap arenas and their memory is never handed back: RSS then grows
/// with every large answer ever seen. A fixed threshold keeps large bodies in mappings of
/// their own, returned on free; two arenas per core (glibc's default is eight) keep the
/// free memory held in idle arenas from adding up across threads.
enum MemoryReturn {
    static func configure() {
        larder_malloc_configure(128 * 1024, Int32(2 * max(1, ProcessInfo.processInfo.activeProcessorCount)))
    }
}

struct UpstreamSim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upstream-sim", abstract: "Run the upstream simulator alone (Open-Meteo and balance formats).")

    @Option(help: "Listen address.") var host = "127.0.0.1"
    @Option(help: "Listen port, 0 for any free port.") var port = 8081
    @Option(help: "Added to every answer: 80ms, 1s, 0.") var latency = "80ms"
    @Option(help: "Share of requests answered 503, from 0 to 1.") var errorRate = 0.0
    @Option(help: "max-age sent with every answer, in seconds.") var maxAge = 60

    func run() async throws {
        LogOutput.bootstrap(level: .info, format: .text)
        guard (0...65535).contains(port) else { throw ConfigurationError("--port must be from 0 to 65535, got \(port)") }
        guard (0...1).contains(errorRate) else { throw ConfigurationError("--error-rate must be from 0 to 1, got \(errorRate)") }
        guard maxAge >= 0 else { throw ConfigurationError("--max-age must not be negative") }
        var settings = UpstreamSimulator.Settings()
        settings.host = host
        settings.port = port
        settings.errorRate = errorRate
        settings.maxAge = maxAge
        guard let latency = ServeSettings.parseDuration(latency) else {
            throw ConfigurationError("--latency must be a duration (seconds, or with ms, s, m, h), got '\(latency)'")
        }
        settings.latency = latency
        try await SimulatorService(settings: settings).runUntilSignalled()
    }
}

struct HealthCheck: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "healthcheck", abstract: "Exit 0 when the URL answers 2xx, else 1 (for Docker HEALTHCHECK).")

    @Option(help: "The URL to ask (default: /readyz where serve listens with the same file and environment).")
    var url: String?
    @Option(help: "The configuration file serve reads, for its host and port (LARDER_CONFIG).") var config: String?

    /// Unhealthy says why on standard error (the orchestrator keeps it with the probe's result).
    func run() async throws {
        let url: String
        if let given = self.url { url = given } else { url = try await defaultURL() }
        let client = UpstreamClient()
        let outcome: Result<Int, UpstreamError>
        do {
            outcome = .success(try await client.fetch(UpstreamRequest(url: url, timeout: .seconds(3))).status)
        } catch {
            outcome = .failure(error as? UpstreamError ?? .invalidRequest("\(error)"))
        }
        await client.shutdown()
        if let problem = HealthCheckDefaults.problem(url: url, outcome) {
            FileHandle.standardError.write(Data("larder healthcheck: \(problem)\n".utf8))
            throw ExitCode(1)
        }
    }

    /// Where `serve` listens: the file (if any), then the environment over it. A file that
    /// cannot be read is unhealthy, as `serve` would not start on it.
    private func defaultURL() async throws -> String {
        let environment = ProcessInfo.processInfo.environment
        guard let path = config ?? environment["LARDER_CONFIG"] else { return HealthCheckDefaults.url(environment: environment) }
        do {
            let file = try await ConfigFile.load(path: path)
            return HealthCheckDefaults.url(settings: try ServeSettings.resolve(flags: [:], environment: environment, file: file))
        } catch {
            FileHandle.standardError.write(Data("larder healthcheck: \(error.problems.first ?? "the configuration file cannot be read")\n".utf8))
            throw ExitCode(1)
        }
    }
}
