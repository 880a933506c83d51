#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import TestSupport

/// Reloads give back what they take: a `larder serve` reloaded thousands of times (as a
/// configuration pusher would over weeks) ends with the memory and threads it started with.
/// A child process, so that no other test's memory is counted.
@Suite(.timeLimit(.minutes(2))) struct ReloadMemoryTests {
    /// A field of /proc/PID/status (`VmRSS` in KiB, `Threads`).
    static func status(_ pid: pid_t, _ field: String) -> Int? {
        let text = String(decoding: LarderProcess.contents(of: "/proc/\(pid)/status"), as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }) else { return nil }
        return Int(line.dropFirst(field.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
    }

    @Test(.disabled(if: underSanitizer, "a sanitizer's shadow memory and quarantine are not Larder's"))
    func thousandsOfReloadsLeaveMemoryAndThreadsWhereTheyWere() async throws {
        let token = "reload-memory-token"
        let tokenPath = try ConfigFixture.file(token + "\n")
        let dead = "http://svc:secret@127.0.0.1:9"
        let path = try ConfigFixture.file("""
            port: 0
            routes:
              /a:
                origin: \(dead)/a
              /b:
                origin: \(dead)/b
              /c:
                origin: \(dead)/c
            """)
        let larder = try LarderProcess(["serve", "--config", path, "--log-level", "warning",
                                        "--admin-port", "0", "--admin-token-file", tokenPath])
        _ = try await larder.waitForPort()
        var adminPort: Int?
        for _ in 0..<100 where adminPort == nil {
            adminPort = larder.output.firstMatch(of: /admin listening on http:\/\/[^\s]+:(\d+)/).flatMap { Int($0.1) }
            if adminPort == nil { try await Task.sleep(for: .milliseconds(20)) }
        }
        let admin = try TestClient(port: try #require(adminPort))
        func reload(_ times: Int) async throws {
            for _ in 0..<times {
                try admin.send("POST /reload HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\nContent-Length: 0\r\n\r\n")
                let answer = try await admin.readResponse()
                guard answer.status == 200 else {
                    Issue.record("reload answered \(answer.status): \(answer.text)")
                    return
                }
            }
        }
        // Warm up: the allocator's arenas, the first lines of every log, the pools' threads.
        try await reload(300)
        try await Task.sleep(for: .milliseconds(300))
        let (rssBefore, threadsBefore) = (try #require(Self.status(larder.pid, "VmRSS")), try #require(Self.status(larder.pid, "Threads")))
        let reloads = 3000
        let start = ContinuousClock.now
        try await reload(reloads)
        try await Task.sleep(for: .milliseconds(300))
        // A reload's file is read on a thread of its own that ends after its answer, and a
        // loaded run may sample it on its way out: the count is taken once it settles.
        var threadsAfter = try #require(Self.status(larder.pid, "Threads"))
        for _ in 0..<50 where threadsAfter > threadsBefore {
            try await Task.sleep(for: .milliseconds(100))
            threadsAfter = try #require(Self.status(larder.pid, "Threads"))
        }
        let rssAfter = try #require(Self.status(larder.pid, "VmRSS"))
        print("reload memory: \(reloads) reloads in \(ContinuousClock.now - start), RSS \(rssBefore) -> \(rssAfter) KiB, threads \(threadsBefore) -> \(threadsAfter)")
        // 7 KB a reload before the fix: 21 MB here.
        #expect(rssAfter - rssBefore < 4 * 1024, "RSS \(rssBefore) -> \(rssAfter) KiB over \(reloads) reloads")
        // A thread kept per reload would be thousands; one more is a pool grown late.
        #expect(threadsAfter <= threadsBefore + 1, "threads \(threadsBefore) -> \(threadsAfter)")
        larder.signal(SIGTERM)
        #expect(await larder.waitForExit() == 0)
    }
}
