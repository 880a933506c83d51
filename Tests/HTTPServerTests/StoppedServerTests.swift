#if canImport(Glibc)
import Glibc
#endif
import Testing
import TestSupport
import HTTPServer

/// A server that has stopped owns no descriptor any more, and must not write to one: its
/// numbers are the next ones the process opens (another connection, a log pipe). A second
/// stop, or a handler that finishes after its loop ended, once wrote the loop's wake (eight
/// bytes: 01 00 00 00 00 00 00 00) into whatever held the number by then, which a
/// connection's server read as a request that is not HTTP.
@Suite(.timeLimit(.minutes(1))) struct StoppedServerTests {
    @Test func aLateAnswerAndASecondStopWriteNothingToDescriptorsOpenedSince() async throws {
        let gate = Gate(open: false)
        // The loop ends at the grace period with the answer still being made.
        let server = try await stopWhileAnAnswerIsMade(gate: gate)
        // The numbers the loop freed (its listener, epoll and eventfd) go to what the process
        // opens next: pairs of sockets here, every end of which would show a stray write.
        var pairs: [[Int32]] = []
        defer { pairs.joined().forEach { close($0) } }
        for _ in 0..<8 {
            var ends: [Int32] = [0, 0]
            try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &ends) == 0)
            pairs.append(ends)
        }
        gate.open()  // the answer is finished after its loop ended
        await server.shutdown()  // and the server is stopped again
        try await Task.sleep(for: .milliseconds(200))
        for end in pairs.joined() {
            var byte: UInt8 = 0
            #expect(read(end, &byte, 1) == -1 && errno == EAGAIN, "descriptor \(end) was written to")
        }
    }
}
