#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A real `redis-server` for a test: on a free loopback port, no persistence, its own
/// folder, stopped by `stop()` (and killed on deinit). `restart()` brings it back on the
/// same port, as an operator's restart would.
public final class RedisServer: @unchecked Sendable {
    public private(set) var port: Int
    private var pid: pid_t?
    private let folder: String

    public var url: String { "redis://127.0.0.1:\(port)" }

    /// Where Debian puts it; `make test` installs it when missing.
    public static let executable: String? = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"].first { (path: String) in
        access(path, X_OK) == 0
    }

    public init() async throws {
        guard Self.executable != nil else { throw TestClientError("redis-server is not installed (make test installs it)") }
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("larder-redis-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        port = 0
        // A port found free can be taken before redis binds it: try a few.
        for _ in 0..<5 {
            port = freePort()
            if try await launch() { return }
        }
        throw TestClientError("redis-server did not start: \(log)")
    }

    deinit { kill() }

    public var log: String { String(decoding: LarderProcess.contents(of: folder + "/redis.log"), as: UTF8.self) }

    /// Starts redis on `port`; true once it says it accepts connections.
    private func launch() async throws -> Bool {
        let child = try ChildProcess.spawn(Self.executable!, [
            "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", folder,
            "--daemonize", "no", "--protected-mode", "no",
        ], stdout: .file(folder + "/redis.log"), stderr: .file(folder + "/redis.err"))
        pid = child
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            // Its own word, not a connect: another test's server could hold a port redis failed to bind.
            if log.contains("Ready to accept connections") { return true }
            var status: Int32 = 0
            if waitpid(child, &status, WNOHANG) == child {
                pid = nil
                return false
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        kill()
        return false
    }

    /// Stops the server (SIGKILL: nothing to save) and waits for it to go.
    public func kill() {
        guard let pid else { return }
        Glibc.kill(pid, SIGKILL)
        ChildProcess.wait(pid)
        self.pid = nil
    }

    /// Starts it again on the same port, empty.
    public func restart() async throws {
        kill()
        guard try await launch() else { throw TestClientError("redis-server did not restart on \(port): \(log)") }
    }

    public func stop() { kill() }
}
