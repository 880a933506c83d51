import Foundation
import HTTPCore
import HTTPServer
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// One client address cannot hold every connection slot with connections it never uses:
/// once half the slots are taken, past a cap per address its next one is closed at once, and a connection that sends
/// nothing is closed sooner than an idle one that was used.
@Suite(.timeLimit(.minutes(1))) struct UnusedConnectionTests {
    /// `count` connections from `source` that send nothing (yet).
    static func open(_ count: Int, to port: Int, from source: String) throws -> [TestClient] {
        try (0..<count).map { _ in try TestClient(port: port, source: source, timeout: .seconds(3)) }
    }

    static func served(_ client: TestClient, _ target: String = "/livez") async -> Int? {
        guard (try? client.send("GET \(target) HTTP/1.1\r\nHost: t\r\n\r\n")) != nil else { return nil }
        return try? await client.readResponse().status
    }

    /// The attack itself: one address opens more connections than the server takes in all.
    /// Without a cap per address, every other client got 503 until they were closed.
    @Test func anUnusedFloodFromOneAddressNeverDeniesAnother() async throws {
        try await withServer({ configuration in
            configuration.maxConnections = 32
            configuration.maxUnusedConnectionsPerClient = 8
        }, handler: { _ in .now(HTTPResponse(status: 200, body: "ok")) }) { server, port in
            let flood = try Self.open(100, to: port, from: "127.0.0.1")
            #expect(await eventually { server.acceptedConnections >= 100 })
            // Half the slots, then no more than the cap per address.
            #expect(await eventually { server.openConnections <= 16 })
            #expect(server.refusedUnusedConnections >= 84)
            for _ in 0..<3 {
                #expect(await Self.served(try TestClient(port: port, source: "127.0.0.2"), "/") == 200)
            }
            withExtendedLifetime(flood) {}
        }
    }

    @Test func aConnectionThatSendsNothingIsClosedSoonerThanAUsedIdleOne() async throws {
        try await withServer({ configuration in
            configuration.firstByteTimeout = .milliseconds(300)
            configuration.idleTimeout = .seconds(20)
        }, handler: { _ in .now(HTTPResponse(status: 200, body: "ok")) }) { server, port in
            let silent = try TestClient(port: port)
            let used = try TestClient(port: port)
            #expect(await Self.served(used, "/") == 200)
            #expect(await silent.waitForClose(within: .seconds(5)))
            #expect(!(await used.waitForClose(within: .milliseconds(1500))))
            #expect(await Self.served(used, "/") == 200)
            // A request begun in time is not cut off by the first-byte timeout either.
            let slow = try TestClient(port: port)
            try slow.send("GET / HTTP/1.1\r\n")
            try await Task.sleep(for: .milliseconds(800))
            try slow.send("Host: t\r\n\r\n")
            #expect(try await slow.readResponse().status == 200)
        }
    }
}
