#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Testing
import TestSupport
@testable import HTTPServer

/// A server that has stopped owns no descriptor any more, and must not write to one: its
/// numbers are the next ones the process opens (another connection, a log pipe). A second
/// stop, or a handler that finishes after its loop ended, once wrote the loop's wake (eight
/// bytes: 01 00 00 00 00 00 00 00) into whatever held the number by then, which a
/// connection's server read as a request that is not HTTP.
@Suite(.timeLimit(.minutes(1))) struct StoppedServerTests {
    @Test func aLateAnswerAndASecondStopWriteNothingToDescriptorsOpenedSince() async throws {
        let gate = Atomic<Bool>(false)
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.eventLoops = 1
        configuration.shutdownGracePeriod = .milliseconds(100)
        let server = HTTPServer(configuration: configuration) { _ in
            .later {
                while !gate.load(ordering: .relaxed) { try? await Task.sleep(for: .milliseconds(5)) }
                return HTTPResponse(status: 200, body: "late")
            }
        }
        try server.start()
        let client = try TestClient(port: server.port!)
        try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        try await Task.sleep(for: .milliseconds(100))
        // The loop ends at the grace period with the answer still being made.
        await server.shutdown()
        // The numbers the loop freed (its listener, epoll and eventfd) go to what the process
        // opens next: pairs of sockets here, every end of which would show a stray write.
        var pairs: [[Int32]] = []
        defer { pairs.joined().forEach { close($0) } }
        for _ in 0..<8 {
            var ends: [Int32] = [0, 0]
            try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &ends) == 0)
            pairs.append(ends)
        }
        gate.store(true, ordering: .relaxed)  // the answer is finished after its loop ended
        await server.shutdown()  // and the server is stopped again
        try await Task.sleep(for: .milliseconds(200))
        for end in pairs.joined() {
            var byte: UInt8 = 0
            #expect(read(end, &byte, 1) == -1 && errno == EAGAIN, "descriptor \(end) was written to")
        }
    }
}
