#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The built `larder` executable run as a child process, as an operator would run it.
/// Its standard output and error go to files the test polls, so no read can hang.
///
/// Spawned with `posix_spawn` rather than Foundation's `Process`, whose `run()` crashed
/// here (a bad `memmove`) while other tests were opening sockets and threads at once.
public final class LarderProcess: @unchecked Sendable {
    public let pid: pid_t
    public let outputPath: String
    public let errorPath: String
    private var exitStatus: Int32?

    /// The executable next to the test bundle (SwiftPM puts both in the build folder).
    public static var executablePath: String { path(of: "larder") }

    /// Any of the package's executables (`larder`, `larder-bench`, `larder-fuzz`).
    public static func path(of executable: String) -> String {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent(executable).path
    }

    /// Starts `larder` with `arguments`. Its cache directory defaults (through
    /// `LARDER_CACHE_DIR`) to a fresh folder, so no test writes into the repository.
    /// `stdout` replaces the output file (`output` is then empty).
    public init(_ arguments: [String], environment: [String: String] = [:], executable: String = "larder",
                stdout: ChildProcess.Stream? = nil) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("larder-test-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        outputPath = folder + "/stdout"
        errorPath = folder + "/stderr"
        let variables = ["PATH": "/usr/bin:/bin", "LARDER_CACHE_DIR": folder + "/cache"].merging(environment) { $1 }
        pid = try ChildProcess.spawn(Self.path(of: executable), arguments, environment: variables,
                                     stdout: stdout ?? .file(outputPath), stderr: .file(errorPath))
    }

    deinit {
        if exitStatus == nil {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
    }

    public var output: String { String(decoding: Self.contents(of: outputPath), as: UTF8.self) }
    public var errorOutput: String { String(decoding: Self.contents(of: errorPath), as: UTF8.self) }

    /// A file's bytes with plain read(2): this Foundation's file reading leaks its buffer
    /// (LeakSanitizer reports it under `make sanitize`), and these files are read in loops.
    public static func contents(of path: String) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return bytes }
            bytes += chunk[0..<n]
        }
    }

    private var isRunning: Bool {
        if exitStatus != nil { return false }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return true }
        // WIFEXITED / WEXITSTATUS, or 128 + signal number as a shell reports it.
        exitStatus = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return false
    }

    /// Waits for the `listening on http://HOST:PORT` line and returns the port.
    public func waitForPort(timeout: Duration = .seconds(30)) async throws -> Int {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let match = output.firstMatch(of: /listening on http:\/\/[^\s]+:(\d+)/), let port = Int(match.1) {
                return port
            }
            if !isRunning { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestClientError("no listening line; stdout: \(output) stderr: \(errorOutput)")
    }

    /// Waits for the process to exit and returns its status, or nil past the timeout.
    public func waitForExit(timeout: Duration = .seconds(15)) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while isRunning, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return exitStatus
    }

    public func signal(_ signal: Int32) { kill(pid, signal) }
}
