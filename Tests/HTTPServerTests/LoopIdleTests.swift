#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPServer
import Synchronization
import Testing
import TestSupport
import Bodies

/// A loop never polls: between its callers' requests it sleeps, with open keep-alive
/// connections, and costs next to no CPU (`IdleStrategy`).
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

    /// The share of one core (1 is all of it) a thread of this process used while `body` ran,
    /// from its CPU ticks, and the reading it came from for a failure's message.
    static func coreShare(thread: Int32, while body: () async throws -> Void) async throws -> (share: Double, reading: String) {
        let (shares, reading) = try await coreShares(threads: [thread], while: body)
        return (shares[0], reading)
    }

    /// `coreShare` for several threads over the same span.
    static func coreShares(threads: [Int32], while body: () async throws -> Void) async throws -> (shares: [Double], reading: String) {
        let before = try threads.map { try #require(cpuTicks(thread: $0)) }
        let started = ContinuousClock.now
        try await body()
        let elapsed = ContinuousClock.now - started
        let used = try zip(threads, before).map { try #require(cpuTicks(thread: $0.0)) - $0.1 }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let shares = used.map { Double($0) / (Double(sysconf(Int32(_SC_CLK_TCK))) * seconds) }
        return (shares, "\(used.map(String.init).joined(separator: ", ")) ticks in \(elapsed)")
    }

    /// Two callers on two loops, each sending a request every few milliseconds: both loops
    /// sleep through the pauses. Polling through them (as an earlier, opt-in idle strategy
    /// did) used 0.93 to 0.97 of a core per loop here.
    @Test func twoLoopsSleepThroughTheirCallersPauses() async throws {
        let loopThread = Atomic<Int32>(0)
        let handler: HTTPHandler = { _ in
            loopThread.store(Self.threadID(), ordering: .relaxed)
            return .now(HTTPResponse(status: 200, body: "ok"))
        }
        try await withServer({ $0.eventLoops = 2 }, handler: handler) { _, port in
            // The kernel spreads connections over the two listeners by a hash of their
            // addresses: connect until one client reaches each loop.
            var clients: [Int32: TestClient] = [:]
            for _ in 0..<200 where clients.count < 2 {
                let client = try TestClient(port: port)
                try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
                #expect(try await client.readResponse().text == "ok")
                let thread = loopThread.load(ordering: .relaxed)
                if clients[thread] == nil { clients[thread] = client }
            }
            try #require(clients.count == 2, "no connection reached the second loop")
            let threads = Array(clients.keys)
            let (shares, reading) = try await Self.coreShares(threads: threads) {
                for _ in 0..<50 {
                    for thread in threads {
                        try clients[thread]!.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
                        #expect(try await clients[thread]!.readResponse().text == "ok")
                        try await Task.sleep(for: .milliseconds(5))
                    }
                }
            }
            #expect(shares.max()! < 0.3, "each loop's share of a core: \(shares) (\(reading))")
        }
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
            let (share, reading) = try await Self.coreShare(thread: loopThread.load(ordering: .relaxed)) {
                try await Task.sleep(for: .seconds(1))
            }
            // A spinning loop would use about the whole second (100 ticks); a sleeping one, none.
            #expect(share < 0.2, "\(reading)")
            for client in clients {
                try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
                #expect(try await client.readResponse().text == "ok")
            }
        }
    }

    /// A miss's shape: the request turn starts a Task, a later turn sends the answer it made.
    /// Only the first heard from the caller, so only after it may the loop yield; after the
    /// answer it sleeps at once through the caller's pause.
    @Test func aLoopSleepsAtOnceAfterAnAnswerMadeInATask() async throws {
        let loopThread = Atomic<Int32>(0)
        let handler: HTTPHandler = { _ in
            loopThread.store(Self.threadID(), ordering: .relaxed)
            return .later {
                try? await Task.sleep(for: .milliseconds(2))
                return HTTPResponse(status: 200, body: "later")
            }
        }
        try await withServer({ $0.eventLoops = 1 }, handler: handler) { _, port in
            let client = try TestClient(port: port)
            try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try await client.readResponse().text == "later")
            let (share, reading) = try await Self.coreShare(thread: loopThread.load(ordering: .relaxed)) {
                for _ in 0..<40 {
                    try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
                    #expect(try await client.readResponse().text == "later")
                    try await Task.sleep(for: .milliseconds(25))
                }
            }
            #expect(share < 0.35, "\(reading)")
        }
    }
}
