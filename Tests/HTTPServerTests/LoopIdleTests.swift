#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPServer
import Synchronization
import Testing
import TestSupport

/// A loop that has just served looks again before it sleeps, yielding the core first
/// (`EventLoop.pollYieldingFirst`): that must stay a look, never a spin. An idle loop with
/// open keep-alive connections sleeps, and costs next to no CPU.
@Suite(.timeLimit(.minutes(1))) struct LoopIdleTests {
    /// CPU time (user and system) of one thread of this process, in clock ticks.
    static func cpuTicks(thread: Int32) -> Int? {
        guard let stat = try? String(contentsOfFile: "/proc/self/task/\(thread)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // Fields after the command name: state is field 3, utime 14 and stime 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
        return user + system
    }

    /// The calling thread's id, read from `/proc/thread-self` (`<pid>/task/<tid>`).
    static func threadID() -> Int32 {
        var path = [CChar](repeating: 0, count: 64)
        let n = readlink("/proc/thread-self", &path, path.count - 1)
        guard n > 0 else { return 0 }
        return Int32(String(decoding: path[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self).split(separator: "/").last ?? "") ?? 0
    }

    @Test func aLoopThatHasJustServedSleepsOnceNothingComes() async throws {
        let loopThread = Atomic<Int32>(0)
        let handler: HTTPHandler = { _ in
            // Handlers run on the loop's own thread.
            loopThread.store(Self.threadID(), ordering: .relaxed)
            return .now(HTTPResponse(status: 200, body: "ok"))
        }
        try await withServer({ $0.eventLoops = 1 }, handler: handler) { _, port in
            let clients = try (0..<8).map { _ in try TestClient(port: port) }
            for _ in 0..<50 {
                for client in clients { try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n") }
                for client in clients { #expect(try await client.readResponse().text == "ok") }
            }
            let thread = loopThread.load(ordering: .relaxed)
            let before = try #require(Self.cpuTicks(thread: thread))
            let started = ContinuousClock.now
            try await Task.sleep(for: .seconds(1))
            let elapsed = ContinuousClock.now - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            let used = try #require(Self.cpuTicks(thread: thread)) - before
            // A spinning loop would use about the whole second (100 ticks); a sleeping one, none.
            let ticksPerSecond = sysconf(Int32(_SC_CLK_TCK))
            #expect(Double(used) < Double(ticksPerSecond) * seconds * 0.2, "\(used) ticks in \(elapsed)")
            for client in clients {
                try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
                #expect(try await client.readResponse().text == "ok")
            }
        }
    }
}
