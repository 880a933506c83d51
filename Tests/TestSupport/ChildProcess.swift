#if canImport(Glibc)
import Glibc
#endif
public import CLinux
import Foundation

/// Starts programs for tests with `posix_spawn`, with the environment and standard streams
/// given explicitly. Foundation's `Process.run` is not used: it copies the process's own
/// environment and has crashed inside that copy (a memcpy past a page) under the parallel
/// test run.
public enum ChildProcess {
    /// Where a child's standard stream goes: a file (created, truncated), `/dev/null`, or
    /// an existing descriptor.
    public enum Stream {
        case file(String)
        case null
        case descriptor(Int32)
    }

    public static func spawn(_ path: String, _ arguments: [String], environment: [String: String] = ["PATH": "/usr/bin:/bin"],
                             stdin: Stream = .null, stdout: Stream = .null, stderr: Stream = .null) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (fd, stream, flags) in [(Int32(0), stdin, O_RDONLY), (1, stdout, O_WRONLY | O_CREAT | O_TRUNC), (2, stderr, O_WRONLY | O_CREAT | O_TRUNC)] {
            switch stream {
            case .file(let file): posix_spawn_file_actions_addopen(&actions, fd, file, flags, 0o644)
            case .null: posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
            case .descriptor(let source): posix_spawn_file_actions_adddup2(&actions, source, fd)
            }
        }
        // Nothing else of the test process's goes with the child. Descriptors opened without
        // CLOEXEC (a raw test server's accepted socket, hiredis's and curl's sockets) would
        // otherwise live on in a child spawned meanwhile, and a close in the test would send
        // no FIN or reset while that child runs.
        larder_spawn_close_from(&actions, 3)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.merging(sanitizerOptions) { given, _ in given }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        let status = posix_spawn(&child, path, &actions, nil, argv, envp)
        guard status == 0 else { throw TestClientError("posix_spawn \(path): \(status)") }
        return child
    }

    /// The sanitizers' options `make sanitize` sets (its leak suppressions among them) go with
    /// every child: a sanitized larder is judged by the same rules as the test process.
    private static let sanitizerOptions = ProcessInfo.processInfo.environment.filter { name, _ in
        ["ASAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS", "UBSAN_OPTIONS"].contains(name)
    }

    /// Waits for the child to end; its exit status, or 128 + the signal that ended it.
    @discardableResult
    public static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }
}

/// `make sanitize` sets this: memory figures of a sanitized process do not measure Larder,
/// nor do a sanitized loop's CPU shares measure its scheduling.
public let underSanitizer = ProcessInfo.processInfo.environment["LARDER_SANITIZER"] != nil
