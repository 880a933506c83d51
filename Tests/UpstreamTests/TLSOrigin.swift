import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// An https origin on loopback for the TLS tests: a CA and a server certificate for
/// 127.0.0.1 made with Debian's `openssl` in a fresh directory, and `openssl s_server -www`
/// answering every GET with 200. It binds port 0 and reports the port it got; `stop` ends it.
final class TLSOrigin {
    let port: Int
    /// The PEM of the CA that signed the server's certificate (what `--ca-file` names).
    let caFile: String
    private let server: pid_t
    /// The write end of s_server's stdin, held open: at end of input it would stop.
    private let input: Int32

    init() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("larder-tls-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        func path(_ name: String) -> String { directory + "/" + name }
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try Self.openssl(["req", "-x509"] + key + ["-keyout", path("ca.key"), "-out", path("ca.pem"), "-days", "2",
                                                   "-subj", "/CN=Larder Test CA"])
        try Self.openssl(["req"] + key + ["-keyout", path("server.key"), "-out", path("server.csr"), "-subj", "/CN=127.0.0.1"])
        try "subjectAltName=IP:127.0.0.1\n".write(toFile: path("ext.cnf"), atomically: true, encoding: .utf8)
        try Self.openssl(["x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
                          "-CAcreateserial", "-out", path("server.pem"), "-days", "2", "-extfile", path("ext.cnf")])
        caFile = path("ca.pem")

        var pipe: [Int32] = [0, 0]
        guard Glibc.pipe(&pipe) == 0 else { throw TLSOriginError(description: "pipe: errno \(errno)") }
        for end in pipe { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }  // only s_server's stdin (a dup) stays open in a child
        input = pipe[1]
        defer { close(pipe[0]) }
        server = try ChildProcess.spawn(Self.opensslPath, ["s_server", "-accept", "127.0.0.1:0", "-cert", path("server.pem"),
                                                           "-key", path("server.key"), "-www"],
                                        stdin: .descriptor(pipe[0]), stdout: .file(path("out.txt")))
        // s_server prints `ACCEPT 127.0.0.1:PORT` once it listens.
        let deadline = Date().addingTimeInterval(10)
        var found: Int?
        while found == nil, Date() < deadline {
            let text = (try? String(contentsOfFile: path("out.txt"), encoding: .utf8)) ?? ""
            found = text.firstMatch(of: /ACCEPT 127\.0\.0\.1:(\d+)/).flatMap { Int($0.1) }
            if found == nil { usleep(20_000) }
        }
        guard let found else {
            kill(server, SIGKILL)
            ChildProcess.wait(server)
            close(input)
            throw TLSOriginError(description: "openssl s_server did not report its port")
        }
        port = found
    }

    /// SIGKILL, not `terminate()`'s SIGTERM: a child spawned from a test thread inherits its
    /// signal mask, in which SIGTERM may be blocked.
    func stop() {
        kill(server, SIGKILL)
        ChildProcess.wait(server)
        close(input)
    }

    static let opensslPath: String = ["/usr/bin/openssl", "/bin/openssl"].first(where: { (path: String) in access(path, X_OK) == 0 })
        ?? "/usr/bin/openssl"

    private static func openssl(_ arguments: [String]) throws {
        let status = ChildProcess.wait(try ChildProcess.spawn(opensslPath, arguments))
        guard status == 0 else {
            throw TLSOriginError(description: "openssl \(arguments.first ?? "") exited \(status)")
        }
    }
}

struct TLSOriginError: Error, CustomStringConvertible {
    let description: String
}
