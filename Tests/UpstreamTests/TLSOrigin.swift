import Foundation
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
    private let server: Process

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

        FileManager.default.createFile(atPath: path("out.txt"), contents: nil)
        server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        server.arguments = ["openssl", "s_server", "-accept", "127.0.0.1:0", "-cert", path("server.pem"), "-key", path("server.key"), "-www"]
        server.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: path("out.txt")))
        server.standardError = FileHandle.nullDevice
        server.standardInput = Pipe()
        try server.run()
        // s_server prints `ACCEPT 127.0.0.1:PORT` once it listens.
        let deadline = Date().addingTimeInterval(10)
        var found: Int?
        while found == nil, Date() < deadline {
            let text = (try? String(contentsOfFile: path("out.txt"), encoding: .utf8)) ?? ""
            found = text.firstMatch(of: /ACCEPT 127\.0\.0\.1:(\d+)/).flatMap { Int($0.1) }
            if found == nil { usleep(20_000) }
        }
        guard let found else {
            kill(server.processIdentifier, SIGKILL)
            throw TLSOriginError(description: "openssl s_server did not report its port")
        }
        port = found
    }

    /// SIGKILL, not `terminate()`'s SIGTERM: a child spawned from a test thread inherits its
    /// signal mask, in which SIGTERM may be blocked.
    func stop() {
        kill(server.processIdentifier, SIGKILL)
        server.waitUntilExit()
    }

    private static func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TLSOriginError(description: "openssl \(arguments.first ?? "") exited \(process.terminationStatus)")
        }
    }
}

struct TLSOriginError: Error, CustomStringConvertible {
    let description: String
}
