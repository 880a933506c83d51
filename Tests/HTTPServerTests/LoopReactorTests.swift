#if canImport(Glibc)
import Glibc
#endif
import HTTPCore
import Bodies
import LoopGuests
import HTTPServer
import Synchronization
import Testing
import TestSupport
import Locking

/// The door an event loop opens to guests (`LoopReactor`): descriptors watched in its
/// epoll, a timer, the end of the loop, and work put off until the turn's answers are out.
@Suite struct LoopReactorTests {
    /// Records what the loop told it, and on which thread.
    final class RecordingGuest: LoopGuest, @unchecked Sendable {
        let events = Locked<[String]>([])
        let loop: any LoopReactor
        let pipeRead: Int32

        init(loop: any LoopReactor, pipeRead: Int32) {
            self.loop = loop
            self.pipeRead = pipeRead
        }

        private func record(_ event: String) {
            events.withLock { $0.append(loop.isCurrent ? event : "\(event) off the loop") }
        }

        func ready(_ fd: Int32, readable: Bool, writable: Bool, failed: Bool) {
            var byte: UInt8 = 0
            let n = read(fd, &byte, 1)
            record("ready \(fd == pipeRead) \(readable) \(writable) \(n == 1 ? Character(UnicodeScalar(byte)) : "-")")
            // Watched for one byte only: stop, so the loop does not spin on an empty pipe.
            loop.watch(fd, readable: false, writable: false, for: ObjectIdentifier(RecordingGuest.self))
        }

        func timerFired() { record("timer") }
        func loopEnded() { record("ended") }
    }

    @Test func aGuestHearsOfItsDescriptorItsTimerAndTheLoopsEnd() async throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let guestBox = Locked<RecordingGuest?>(nil)
        let pipeRead = fds[0]
        let handler: HTTPHandler = { _ in
            .later {
                guard let loop = LoopExecutor.reactor else {
                    return HTTPResponse(status: 500, body: "not on a loop")
                }
                let key = ObjectIdentifier(RecordingGuest.self)
                let guest = loop.guest(for: key) { RecordingGuest(loop: loop, pipeRead: pipeRead) } as! RecordingGuest
                // One guest per loop, under a key of its own choosing: here the type.
                loop.watch(pipeRead, readable: true, writable: false, for: key)
                loop.setTimer(milliseconds: 30, for: key)
                guestBox.withLock { $0 = guest }
                return HTTPResponse(status: 200, body: "watching")
            }
        }
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.eventLoops = 1
        let server = HTTPServer(configuration: configuration, handler: handler)
        try server.start()
        let client = try TestClient(port: server.port!)
        try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        let response = try await client.readResponse()
        #expect(response.text == "watching")
        let guest = try #require(guestBox.withLock { $0 })
        #expect(await eventually { guest.events.withLock { $0 } == ["timer"] })
        #expect(write(fds[1], "x", 1) == 1)
        #expect(await eventually { guest.events.withLock { $0 } == ["timer", "ready true true false x"] })
        await server.shutdown()
        #expect(guest.events.withLock { $0 } == ["timer", "ready true true false x", "ended"])
        guestBox.withLock { $0 = nil }  // the handler holds the box, the guest its loop: let go
    }

    /// A Task that outlives its loop (its answer finished past the stop's grace period) runs
    /// elsewhere; work it puts off to the end of the turn must still run, as no turn will.
    @Test func afterTurnWorkOfATaskThatOutlivedItsLoopRunsAtOnce() async throws {
        let gate = Gate(open: false)
        let ran = Atomic<Bool>(false)
        _ = try await stopWhileAnAnswerIsMade(gate: gate) {
            LoopExecutor.current?.afterTurn { ran.store(true, ordering: .relaxed) }
        }
        gate.open()
        #expect(await eventually(timeout: .seconds(5)) { ran.load(ordering: .relaxed) })
    }

    @Test func afterTurnWorkRunsOnTheLoopOnceTheAnswerIsWritten() async throws {
        let clientFD = Atomic<Int32>(-1)
        let seen = Locked<[String]>([])
        let handler: HTTPHandler = { _ in
            .later {
                let loop = LoopExecutor.current
                loop?.afterTurn {
                    // The answer reaches the client while this waits, blocking the loop: so it
                    // was written before this ran (loopback delivery itself may lag a little).
                    var client = pollfd(fd: clientFD.load(ordering: .relaxed), events: Int16(POLLIN), revents: 0)
                    let waiting = poll(&client, 1, 5_000) == 1
                    seen.withLock { $0.append("on loop \(loop?.isCurrent == true), answer out \(waiting)") }
                }
                return HTTPResponse(status: 200, body: "done")
            }
        }
        try await withServer({ $0.eventLoops = 1 }, handler: handler) { _, port in
            let client = try TestClient(port: port)
            clientFD.store(client.fd, ordering: .relaxed)
            try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            // Read only afterwards: a read before would take the bytes the work looks for.
            #expect(await eventually { !seen.withLock { $0 }.isEmpty })
            #expect(seen.withLock { $0 } == ["on loop true, answer out true"])
            let response = try await client.readResponse()
            #expect(response.text == "done")
        }
    }

    /// A fetch begins in a Task's job, and libcurl asks for its timer at once: it fires in
    /// the same turn (before the turn's put-off work), so the request goes out without one
    /// more look at epoll first.
    @Test func aTimerDueAtOnceFiresInTheTurnOfTheJobThatSetIt() async throws {
        let guestBox = Locked<RecordingGuest?>(nil)
        let handler: HTTPHandler = { _ in
            .later {
                guard let loop = LoopExecutor.reactor else { return HTTPResponse(status: 500, body: "not on a loop") }
                let key = ObjectIdentifier(RecordingGuest.self)
                let guest = loop.guest(for: key) { RecordingGuest(loop: loop, pipeRead: -1) } as! RecordingGuest
                guestBox.withLock { $0 = guest }
                loop.setTimer(milliseconds: 0, for: key)
                loop.afterTurn { guest.events.withLock { $0.append("after the turn") } }
                return HTTPResponse(status: 200, body: "set")
            }
        }
        try await withServer({ $0.eventLoops = 1 }, handler: handler) { _, port in
            let client = try TestClient(port: port)
            try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try await client.readResponse().text == "set")
            let guest = try #require(guestBox.withLock { $0 })
            #expect(await eventually { guest.events.withLock { $0 }.count == 2 })
            #expect(guest.events.withLock { $0 } == ["timer", "after the turn"])
        }
        guestBox.withLock { $0 = nil }  // the handler holds the box, the guest its loop: let go
    }

    /// Resumes what waits for its timer (as libcurl's callbacks resume a fetch).
    final class ResumingGuest: LoopGuest, @unchecked Sendable {
        let events = Locked<[String]>([])
        var onTimer: (() -> Void)?
        func ready(_ fd: Int32, readable: Bool, writable: Bool, failed: Bool) {}
        func timerFired() { onTimer?() }
        func loopEnded() {}
    }

    /// A job resumed by a timer's work in a Task's turn (libcurl reading an answer's head in
    /// the call that sent the request) runs in that turn before the put-off work, which
    /// would otherwise let a paused stream read on before its head went out.
    @Test func aJobResumedByATimerRunsBeforeTheTurnsPutOffWork() async throws {
        let guestBox = Locked<ResumingGuest?>(nil)
        let handler: HTTPHandler = { _ in
            .later {
                guard let loop = LoopExecutor.reactor else { return HTTPResponse(status: 500, body: "not on a loop") }
                let key = ObjectIdentifier(ResumingGuest.self)
                let guest = loop.guest(for: key) { ResumingGuest() } as! ResumingGuest
                guestBox.withLock { $0 = guest }
                await withCheckedContinuation { continuation in
                    guest.onTimer = {
                        guest.events.withLock { $0.append("timer") }
                        continuation.resume()
                        loop.afterTurn { guest.events.withLock { $0.append("after the turn") } }
                    }
                    loop.setTimer(milliseconds: 0, for: key)
                }
                guest.events.withLock { $0.append("job") }
                return HTTPResponse(status: 200, body: "resumed")
            }
        }
        try await withServer({ $0.eventLoops = 1 }, handler: handler) { _, port in
            let client = try TestClient(port: port)
            try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try await client.readResponse().text == "resumed")
            let guest = try #require(guestBox.withLock { $0 })
            #expect(await eventually { guest.events.withLock { $0 }.count == 3 })
            #expect(guest.events.withLock { $0 } == ["timer", "job", "after the turn"])
            guest.onTimer = nil
        }
        guestBox.withLock { $0 = nil }
    }
}
