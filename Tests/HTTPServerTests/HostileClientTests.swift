#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Testing
import TestSupport
@testable import HTTPServer
import Bodies

/// Clients that try to hold a connection or the server's memory: slowloris patterns, TLS
/// on a plain port, pipelined requests whose answers are never read, and a stop that
/// must not reset a request already received.
/// What the handlers share with a test: how many `/big` answers began, and `/gated`'s gate.
private final class Probe: Sendable {
    let started = Atomic<Int>(0)
    let gate: Atomic<Bool>
    init(gateOpen: Bool = true) { gate = Atomic(gateOpen) }
    static let bigSize = 4 << 20
}

@Suite(.timeLimit(.minutes(1))) struct HostileClientTests {
    /// `/big` answers 4 MiB from a Task, a fresh copy each time (as a disk hit or a miss
    /// would); `started` counts handlers begun. `/gated` waits for `gate`; `/echo` answers at once.
    private func handler(_ probe: Probe) -> HTTPHandler {
        { request in
            switch request.path {
            case "/big":
                return .later {
                    probe.started.add(1, ordering: .relaxed)
                    return HTTPResponse(status: 200, body: [UInt8](repeating: 0x62, count: Probe.bigSize))
                }
            case "/gated":
                return .later {
                    while !probe.gate.load(ordering: .relaxed) { try? await Task.sleep(for: .milliseconds(5)) }
                    return HTTPResponse(status: 200, body: "gated")
                }
            case "/post":
                return .now(HTTPResponse(status: 200, body: request.body))
            default:
                return .now(HTTPResponse(status: 200, body: request.target))
            }
        }
    }

    @Test func pipelinedAsyncAnswersThatAreNotReadStopNewRequests() async throws {
        let probe = Probe()
        try await withServer({ $0.eventLoops = 1 }, handler: handler(probe)) { _, port in
            let client = try TestClient(port: port, timeout: .seconds(20))
            try client.send(String(repeating: "GET /big HTTP/1.1\r\nHost: t\r\n\r\n", count: 32))
            try await Task.sleep(for: .milliseconds(500))
            // The kernel's socket buffers and the 1 MiB output bound hold a few answers; without
            // the bound all 32 (128 MiB) would have been made and queued.
            #expect(probe.started.load(ordering: .relaxed) <= 8)
            for index in 0..<32 {
                let response: TestResponse
                do {
                    response = try await client.readResponse()
                } catch {
                    // Which answer failed, and whether its handler had begun: a stall says where it stopped.
                    Issue.record("answer \(index + 1) of 32: \(error); \(probe.started.load(ordering: .relaxed)) begun")
                    return
                }
                #expect(response.status == 200 && response.body.count == Probe.bigSize)
            }
            #expect(probe.started.load(ordering: .relaxed) == 32)
        }
    }

    @Test func blankLinesDoNotHoldAConnectionOpen() async throws {
        let probe = Probe()
        try await withServer({ $0.headerReadTimeout = .milliseconds(600) }, handler: handler(probe)) { _, port in
            let client = try TestClient(port: port)
            var answered: TestResponse?
            for _ in 0..<20 {
                try? client.send("\r\n")
                try await Task.sleep(for: .milliseconds(200))
                if client.bufferedByteCount > 0 || (try? client.peekAvailable()) == true {
                    answered = try await client.readResponse()
                    break
                }
            }
            #expect(answered?.status == 408)
            #expect(await client.waitForClose(within: .seconds(5)))
        }
    }

    @Test func aBodyThatStopsArrivingGets408() async throws {
        let probe = Probe()
        try await withServer({ $0.bodyProgressTimeout = .milliseconds(500) }, handler: handler(probe)) { _, port in
            let client = try TestClient(port: port)
            try client.send("POST /post HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nab")
            let response = try await client.readResponse()
            #expect(response.status == 408)
            #expect(await client.waitForClose(within: .seconds(5)))
        }
    }

    @Test func aBodyDrippingSlowlyGets408AtTheWholeBodyLimit() async throws {
        let probe = Probe()
        try await withServer({
            $0.bodyProgressTimeout = .seconds(2)
            $0.bodyReadTimeout = .seconds(1)
        }, handler: handler(probe)) { _, port in
            let client = try TestClient(port: port)
            try client.send("POST /post HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n")
            var status: Int?
            for _ in 0..<40 {
                try? client.send("x")  // one byte every 100 ms: progress, but never done
                try await Task.sleep(for: .milliseconds(100))
                if (try? client.peekAvailable()) == true {
                    status = try await client.readResponse().status
                    break
                }
            }
            #expect(status == 408)
        }
    }

    @Test func aTLSClientHelloGets400AtOnce() async throws {
        let probe = Probe()
        try await withServer(handler: handler(probe)) { _, port in
            let client = try TestClient(port: port, timeout: .seconds(2))
            try client.send([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03])
            let response = try await client.readResponse()  // well inside the 10 s header timeout
            #expect(response.status == 400)
            #expect(await client.waitForClose(within: .seconds(5)))
        }
    }

    @Test func aStopAnswersARequestTheKernelAlreadyHolds() async throws {
        let probe = Probe(gateOpen: false)
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.eventLoops = 1
        let server = HTTPServer(configuration: configuration, handler: handler(probe))
        try server.start()
        let client = try TestClient(port: server.port!)
        // The first request holds the connection (an answer is running), so the second
        // waits unread in the socket when the stop begins.
        try client.send("GET /gated HTTP/1.1\r\nHost: t\r\n\r\nGET /echo?second HTTP/1.1\r\nHost: t\r\n\r\n")
        try await Task.sleep(for: .milliseconds(200))
        let stopped = Task { await server.shutdown() }
        try await Task.sleep(for: .milliseconds(200))
        probe.gate.store(true, ordering: .relaxed)
        let first = try await client.readResponse()
        let second = try await client.readResponse()
        #expect(first.text == "gated")
        #expect(second.text == "/echo?second")
        #expect(second.header("connection") == "close")
        await stopped.value
    }
}
