import ArgumentParser
import Foundation
import Logging
import Settings

/// `larder check-config [FILE]`: a configuration file checked before use, as `nginx -t` does.
struct CheckConfig: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Check a configuration file with the LARDER_* variables over it, and print the settings they give, secrets redacted. Exit 0, or 2 with one line per problem, every problem of the file in line order.")

    @Argument(help: "The file (default: LARDER_CONFIG).") var file: String?

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        guard let path = file ?? environment["LARDER_CONFIG"] else {
            throw ConfigurationError("check-config needs a file (or LARDER_CONFIG)")
        }
        let settings: ServeSettings
        do {
            settings = try ServeSettings.resolve(flags: [:], environment: environment, file: try await ConfigFile.load(path: path))
        } catch {
            // Every problem, not the first screen `serve` prints: this is where a file is fixed.
            LarderCommand.fail(error.problems)
        }
        print("\(path): ok")
        for (key, value) in settings.summary.sorted(by: { $0.key < $1.key }) { print("\(key): \(value)") }
    }
}
