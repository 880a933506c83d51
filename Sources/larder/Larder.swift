import ArgumentParser
import Larder
#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The `larder` executable: argument parsing and wiring only.
@main
struct LarderCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "larder",
        abstract: "A caching REST microservice for weather and account balance.",
        subcommands: [Serve.self],
        defaultSubcommand: Serve.self)

    /// Parses and runs; every usage or configuration error exits with status 2 and one line on stderr.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var async = command as? AsyncParsableCommand {
                try await async.run()
            } else {
                try command.run()
            }
        } catch let error as ConfigurationError {
            fail(error.message)
        } catch {
            if exitCode(for: error) == .success { exit(withError: error) }
            fail(message(for: error))
        }
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("larder: \(message)\n".utf8))
        Foundation.exit(2)
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the service (the default command).")

    @Option(help: "Listen address (LARDER_HOST, default 127.0.0.1).")
    var host: String?

    @Option(help: "Listen port, 0 for any free port (LARDER_PORT, default 8080).")
    var port: String?

    @Option(help: "trace, debug, info, notice, warning, error or critical (LARDER_LOG_LEVEL, default info).")
    var logLevel: String?

    @Option(help: "text or json (LARDER_LOG_FORMAT, default text).")
    var logFormat: String?

    func run() async throws {
        var flags: [String: String] = [:]
        flags["host"] = host
        flags["port"] = port
        flags["log.level"] = logLevel
        flags["log.format"] = logFormat
        let settings = try ServeSettings.resolve(flags: flags, environment: ProcessInfo.processInfo.environment)
        LogOutput.bootstrap(level: settings.logLevel, format: settings.logFormat)
        let service = LarderService(settings: settings)
        do {
            try service.start()
        } catch {
            throw ConfigurationError("cannot start: \(error)")
        }
        try await service.runWithoutStarting()
    }
}
