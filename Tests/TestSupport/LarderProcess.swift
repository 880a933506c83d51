import Foundation

/// The built `larder` executable run as a child process, as an operator would run it.
/// Its standard output goes to a file the test polls, so no read can hang.
public final class LarderProcess: @unchecked Sendable {
    public let process = Process()
    public let outputURL: URL
    public let errorURL: URL

    /// The executable next to the test bundle (SwiftPM puts both in the build folder).
    public static var executableURL: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("larder")
    }

    public init(_ arguments: [String], environment: [String: String] = [:]) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("larder-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        outputURL = folder.appendingPathComponent("stdout")
        errorURL = folder.appendingPathComponent("stderr")
        FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        FileManager.default.createFile(atPath: errorURL.path, contents: nil)
        process.executableURL = Self.executableURL
        process.arguments = arguments
        process.environment = ["PATH": "/usr/bin:/bin"].merging(environment) { $1 }
        process.currentDirectoryURL = folder
        process.standardOutput = try FileHandle(forWritingTo: outputURL)
        process.standardError = try FileHandle(forWritingTo: errorURL)
        try process.run()
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    public var output: String { (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "" }
    public var errorOutput: String { (try? String(contentsOf: errorURL, encoding: .utf8)) ?? "" }

    /// Waits for the `listening on http://HOST:PORT` line and returns the port.
    public func waitForPort(timeout: Duration = .seconds(30)) async throws -> Int {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let match = output.firstMatch(of: /listening on http:\/\/[^\s]+:(\d+)/), let port = Int(match.1) {
                return port
            }
            if !process.isRunning { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestClientError("no listening line; stdout: \(output) stderr: \(errorOutput)")
    }

    /// Waits for the process to exit and returns its status, or nil past the timeout.
    public func waitForExit(timeout: Duration = .seconds(15)) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return process.isRunning ? nil : process.terminationStatus
    }

    public func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }
}
