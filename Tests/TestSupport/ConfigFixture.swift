import Foundation
import Settings

/// Configuration files a test writes, and the problems Larder finds in one, each as
/// `check-config` prints it.
public enum ConfigFixture {
    /// A secret file's text, as `/etc/shadow` holds it: what no problem may quote.
    public static let shadowHash = "$6$Qx8sAltsAlt$" + String(repeating: "h4shPart", count: 11)
    public static let shadow = "root:\(shadowHash):19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n"

    /// Writes `text` to a fresh file named `name` and returns its path.
    public static func file(_ text: String, name: String = "larder.yaml") throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("larder-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent(name).path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The problems a file gives, each as the command prints it.
    public static func problems(_ text: String, name: String = "larder.yaml", environment: [String: String] = [:]) async throws -> (path: String, lines: [String]) {
        let path = try file(text, name: name)
        do {
            let config = try await ConfigFile.load(path: path)
            _ = try ServeSettings.resolve(flags: [:], environment: environment, file: config)
            return (path, [])
        } catch {
            return (path, error.problems)
        }
    }
}

extension Error {
    /// A configuration error's lines, or this error as one line.
    public var problems: [String] { (self as? ConfigurationError)?.problems ?? ["\(self)"] }
}
