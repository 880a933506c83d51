#if canImport(Glibc)
import Glibc
#endif
import HTTPCore
import Bodies
import LoopGuests
@testable import HTTPServer
import Synchronization
import Testing
import TestSupport
@testable import Upstream
import Locking

/// Fetches made by the Tasks of an event loop, as Larder's handlers make them: libcurl's
/// sockets and timer are then the loop's, and a loop ending or a client stopping must
/// still end every fetch.
@Suite struct LoopDrivenFetchTests {
    /// What the front server's handler saw of its fetch.
    final class Outcomes: Sendable {
        let errors = Locked<[String]>([])
        let onLoop = Locked<[Bool]>([])
        /// How long each fetch took, timed on the loop around `fetch` alone.
        let durations = Locked<[Duration]>([])
    }

    /// Which of its connections a test upstream is told to close (1: the first; 0: none yet).
    final class CloseOrder: Sendable {
        let number = Atomic(0)
    }

    /// A front server whose every request fetches `url` through `client`, from the loop's Task.
    private func front(_ client: UpstreamClient, _ url: String, _ outcomes: Outcomes) -> HTTPHandler {
        return { _ in
            .later {
                let loop = LoopExecutor.current
                outcomes.onLoop.withLock { $0.append(loop?.isCurrent == true) }
                do {
                    let began = ContinuousClock.now
                    let response = try await client.fetch(UpstreamRequest(url: url, timeout: .seconds(30)))
                    outcomes.durations.withLock { $0.append(ContinuousClock.now - began) }
                    return HTTPResponse(status: 200, body: response.body)
                } catch {
                    outcomes.errors.withLock { $0.append("\(error)") }
                    return HTTPResponse(status: 502, body: "\(error)")
                }
            }
        }
    }

    @Test func fetchesFromALoopAreDrivenByItAndReuseItsConnection() async throws {
        var routes = Router()
        routes.get("/ok") { _ in .now(HTTPResponse(status: 200, body: "from upstream")) }
        try await withServer(handler: routes.handler) { upstream, upstreamPort in
            let client = UpstreamClient()
            let outcomes = Outcomes()
            try await withServer({ $0.eventLoops = 1 }, handler: front(client, "http://127.0.0.1:\(upstreamPort)/ok", outcomes)) { _, port in
                let connection = try TestClient(port: port)
                for _ in 0..<20 {
                    try connection.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
                    let response = try await connection.readResponse()
                    #expect(response.status == 200)
                    #expect(response.text == "from upstream")
                }
            }
            #expect(outcomes.onLoop.withLock { $0 } == Array(repeating: true, count: 20))
            #expect(client.loopsDriving == 1)
            #expect(upstream.acceptedConnections == 1)
            // A fetch off every loop goes to the client's thread and makes no loop guest.
            let direct = try await client.fetch(UpstreamRequest(url: "http://127.0.0.1:\(upstreamPort)/ok"))
            #expect(direct.status == 200)
            #expect(client.loopsDriving == 1)
            await client.shutdown()
            // Let go of at shutdown: a guest holds its loop, whose handler may hold the client,
            // and the cycle kept a whole stopped service alive (LeakSanitizer found it).
            #expect(client.loopsDriving == 0)
        }
    }

    /// libcurl stops watching a connection at the end of each transfer, and the loop leaves
    /// it registered with epoll (see `EventLoop.watch`). An upstream that closes after every
    /// answer makes libcurl close each socket unseen by the loop, and the next one usually
    /// gets the same number: it must be registered afresh, or its fetch would never finish.
    @Test func aNewConnectionOnAClosedOnesNumberIsWatched() async throws {
        let upstream = try RawServer { fd, _ in
            RawServer.readHead(fd)
            RawServer.send(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nfresh")
        }
        defer { upstream.stop() }
        let client = UpstreamClient()
        let outcomes = Outcomes()
        try await withServer({ $0.eventLoops = 1 }, handler: front(client, "http://127.0.0.1:\(upstream.port)/", outcomes)) { _, port in
            let connection = try TestClient(port: port)
            for _ in 0..<10 {
                try connection.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
                #expect(try await connection.readResponse().text == "fresh")
            }
        }
        // Unwatched, a fetch still ends, about a second later, when libcurl's own timer looks
        // at the socket: ten took 14 s that way, against milliseconds alone. Each fetch is
        // timed on the loop, so a busy test process (the whole parallel suite once took
        // 12.9 s for the ten round trips, with every other test as slow) does not count.
        let durations = outcomes.durations.withLock { $0 }.sorted()
        #expect(durations.count == 10 && durations[5] < .milliseconds(500), "fetches took \(durations)")
        #expect(outcomes.errors.withLock { $0 }.isEmpty)
        #expect(upstream.connectionsAccepted == 10)
        await client.shutdown()
    }

    /// An idle connection the upstream closes reports its end to a loop that no longer
    /// watches it for libcurl: the loop drops it then (level-triggered epoll would report it
    /// on every turn), and libcurl, finding it closed, connects again for the next fetch.
    @Test func anIdleConnectionClosedByTheUpstreamIsDroppedAndReplaced() async throws {
        let closing = CloseOrder()
        let upstream = try RawServer { fd, server in
            let number = server.connectionsAccepted
            RawServer.readHead(fd)
            RawServer.send(fd, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nkept")
            let deadline = ContinuousClock.now + .seconds(10)
            while closing.number.load(ordering: .relaxed) != number, ContinuousClock.now < deadline { usleep(2_000) }
        }
        defer { upstream.stop() }
        let client = UpstreamClient()
        let outcomes = Outcomes()
        try await withServer({ $0.eventLoops = 1 }, handler: front(client, "http://127.0.0.1:\(upstream.port)/", outcomes)) { server, port in
            let connection = try TestClient(port: port)
            try connection.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try await connection.readResponse().text == "kept")
            // The transfer's end left the socket registered; its close removes it, once.
            let registered = server.epollChanges
            closing.number.store(1, ordering: .relaxed)
            #expect(await eventually { server.epollChanges == registered + 1 })
            try await Task.sleep(for: .milliseconds(100))
            #expect(server.epollChanges == registered + 1)
            try connection.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try await connection.readResponse().text == "kept")
            closing.number.store(2, ordering: .relaxed)
        }
        #expect(outcomes.errors.withLock { $0 }.isEmpty)
        #expect(upstream.connectionsAccepted == 2)
        await client.shutdown()
    }

    @Test func aLoopEndingFailsTheFetchesItDrives() async throws {
        let upstream = try RawServer { fd, server in server.waitForPeerClose(fd) }
        defer { upstream.stop() }
        let client = UpstreamClient()
        let outcomes = Outcomes()
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.eventLoops = 1
        configuration.shutdownGracePeriod = .milliseconds(200)
        let server = HTTPServer(configuration: configuration, handler: front(client, "http://127.0.0.1:\(upstream.port)/", outcomes))
        try server.start()
        let connection = try TestClient(port: server.port!)
        try connection.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(await eventually { client.transfersInFlight == 1 && upstream.connectionsAccepted == 1 })
        #expect(client.loopsDriving == 1)
        await server.shutdown()
        // Nothing drives the transfer once its loop is gone: it fails rather than waiting forever.
        #expect(await eventually { client.transfersInFlight == 0 })
        #expect(await eventually { outcomes.errors.withLock { $0 } == ["\(UpstreamError.shutDown)"] })
        #expect(await eventually { upstream.connectionsClosedByPeer == 1 })
        await client.shutdown()
    }

    @Test func cancellingALoopDrivenFetchClosesItsConnection() async throws {
        let upstream = try RawServer { fd, server in
            RawServer.readHead(fd)
            server.waitForPeerClose(fd)
        }
        defer { upstream.stop() }
        let client = UpstreamClient()
        let url = "http://127.0.0.1:\(upstream.port)/"
        let handler: HTTPHandler = { _ in
            .later {
                // A child task inherits the loop; cancelling the group cancels its fetch.
                let outcome = await withTaskGroup(of: String.self) { group in
                    group.addTask {
                        do {
                            _ = try await client.fetch(UpstreamRequest(url: url, timeout: .seconds(30)))
                            return "answered"
                        } catch { return "\(type(of: error))" }
                    }
                    while upstream.connectionsAccepted == 0 || client.transfersInFlight == 0 {
                        try? await Task.sleep(for: .milliseconds(5))
                    }
                    group.cancelAll()
                    return await group.next() ?? "none"
                }
                return HTTPResponse(status: 200, body: outcome)
            }
        }
        try await withServer({ $0.eventLoops = 1 }, handler: handler) { _, port in
            let connection = try TestClient(port: port)
            try connection.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            let response = try await connection.readResponse()
            #expect(response.text == "CancellationError")
            #expect(client.loopsDriving == 1)
            #expect(client.transfersInFlight == 0)
            #expect(await eventually { upstream.connectionsClosedByPeer == 1 })
        }
        await client.shutdown()
    }

    @Test func shuttingTheClientDownFailsLoopDrivenFetchesAndTheLoopServesOn() async throws {
        let upstream = try RawServer { fd, server in server.waitForPeerClose(fd) }
        defer { upstream.stop() }
        let client = UpstreamClient()
        let outcomes = Outcomes()
        try await withServer({ $0.eventLoops = 1 }, handler: front(client, "http://127.0.0.1:\(upstream.port)/", outcomes)) { _, port in
            let first = try TestClient(port: port)
            try first.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(await eventually { client.transfersInFlight == 1 })
            await client.shutdown()
            let failed = try await first.readResponse()
            #expect(failed.status == 502)
            #expect(outcomes.errors.withLock { $0 } == ["\(UpstreamError.shutDown)"])
            // The loop still answers: a later fetch is refused by the stopped client, not lost.
            try first.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            let refused = try await first.readResponse()
            #expect(refused.status == 502)
            #expect(outcomes.errors.withLock { $0.count } == 2)
        }
    }
}
