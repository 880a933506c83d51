import Synchronization
import Testing
import TestSupport
@testable import HTTPServer
import Bodies

/// A connection stops reading while its answer is made in a Task (a miss, a disk read), but
/// stays registered for reading until something arrives: a client that waits for its answer
/// costs no epoll_ctl, and one that sends more (or closes) is still read in order, after it.
@Suite(.timeLimit(.minutes(1))) struct ReadInterestTests {
    private final class Gate: Sendable {
        let isOpen = Atomic(false)
        /// Set once `/gated`'s Task has begun: its request has been read.
        let reached = Atomic(false)
        func open() { isOpen.store(true, ordering: .relaxed) }
    }

    /// `/gated` answers from a Task once the gate opens; anything else answers at once.
    private func handler(_ gate: Gate) -> HTTPHandler {
        { request in
            guard request.path == "/gated" else { return .now(HTTPResponse(status: 200, body: request.target)) }
            return .later {
                gate.reached.store(true, ordering: .relaxed)
                while !gate.isOpen.load(ordering: .relaxed) { try? await Task.sleep(for: .milliseconds(5)) }
                return HTTPResponse(status: 200, body: "gated")
            }
        }
    }

    @Test func anAnswerMadeInATaskLeavesTheConnectionsRegistrationAlone() async throws {
        let gate = Gate()
        try await withServer({ $0.eventLoops = 1 }, handler: handler(gate)) { server, port in
            let client = try TestClient(port: port)
            try client.send("GET /first HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try await client.readResponse().text == "/first")
            let registered = server.epollChanges
            try client.send("GET /gated HTTP/1.1\r\nHost: t\r\n\r\n")
            try await Task.sleep(for: .milliseconds(100))
            gate.open()
            #expect(try await client.readResponse().text == "gated")
            try client.send("GET /after HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try await client.readResponse().text == "/after")
            #expect(server.epollChanges == registered)
        }
    }

    @Test func aRequestSentWhileOneIsAnsweredIsReadAfterIt() async throws {
        let gate = Gate()
        try await withServer({ $0.eventLoops = 1 }, handler: handler(gate)) { server, port in
            let client = try TestClient(port: port)
            try client.send("GET /gated HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(await eventually { gate.reached.load(ordering: .relaxed) })
            let registered = server.epollChanges
            try client.send("GET /second HTTP/1.1\r\nHost: t\r\n\r\n")
            // Its arrival dropped read interest (once: level-triggered epoll would otherwise
            // report it on every turn until it is read).
            #expect(await eventually { server.epollChanges == registered + 1 })
            try await Task.sleep(for: .milliseconds(100))
            #expect(server.epollChanges == registered + 1)
            gate.open()
            #expect(try await client.readResponse().text == "gated")
            #expect(try await client.readResponse().text == "/second")
            #expect(server.epollChanges == registered + 2)
        }
    }

    @Test func aClientThatClosesWhileItsAnswerIsMadeStillGetsIt() async throws {
        let gate = Gate()
        try await withServer({ $0.eventLoops = 1 }, handler: handler(gate)) { _, port in
            let client = try TestClient(port: port)
            try client.send("GET /gated HTTP/1.1\r\nHost: t\r\n\r\n")
            try await Task.sleep(for: .milliseconds(100))
            client.shutdownWrite()
            try await Task.sleep(for: .milliseconds(100))
            gate.open()
            #expect(try await client.readResponse().text == "gated")
            #expect(await client.waitForClose(within: .seconds(5)))
        }
    }
}
