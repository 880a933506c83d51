import Synchronization
import Foundation
import Locking
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// Requests collapsed onto one miss share its answer only when a shared cache may store it:
/// an answer for one visitor (a session cookie, `private`, `no-store`) is fetched for each.
@Suite(.timeLimit(.minutes(1)))
struct CollapsedPrivacyTests {
    /// Requests an origin answered.
    final class Served: Sendable {
        let count = Locked(0)
    }

    /// An origin that answers each request after `delay` with a fresh `sid` cookie and the
    /// given `Cache-Control`, on keep-alive connections; counts the requests it answered.
    static func sessionOrigin(cacheControl: String, cookie: Bool = true, delay: Duration = .milliseconds(500),
                              served: Served) throws -> RawServer {
        try RawServer { fd, _ in
            while true {
                let head = RawServer.readHead(fd)
                guard head.hasSuffix("\r\n\r\n") else { return }
                Thread.sleep(forTimeInterval: Double(delay.components.attoseconds) / 1e18 + Double(delay.components.seconds))
                let n = served.count.withLock { count in
                    count += 1
                    return count
                }
                let body = "visitor \(n)"
                let cookieLine = cookie ? "Set-Cookie: sid=\(n); HttpOnly\r\n" : ""
                RawServer.send(fd, "HTTP/1.1 200 OK\r\nCache-Control: \(cacheControl)\r\n\(cookieLine)"
                    + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
            }
        }
    }

    /// Ten concurrent first-time visitors of a page that issues a session: each gets a session
    /// of its own (nine shared the leader's before), and no waiter says `collapsed`.
    @Test(arguments: ["private", "no-store", "no-cache, private", "private, max-age=60", "max-age=60"])
    func tenVisitorsGetTenSessions(cacheControl: String) async throws {
        let served = Served()
        let origin = try Self.sessionOrigin(cacheControl: cacheControl, served: served)
        defer { origin.stop() }
        try await withLarder({ $0.routes = [RouteMount("/p=http://127.0.0.1:\(origin.port)")!] }) { larder in
            let responses = try await withThrowingTaskGroup(of: TestResponse.self) { group in
                for _ in 0..<10 { group.addTask { try await larder.get("/p/login") } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let sids = responses.compactMap { $0.header("Set-Cookie") }
            #expect(responses.allSatisfy { $0.status == 200 })
            #expect(sids.count == 10 && Set(sids).count == 10, "\(sids)")
            #expect(!responses.contains { $0.header("Cache-Status")?.contains("collapsed") == true })
            #expect(served.count.withLock { $0 } == 10)
        }
    }

    /// An answer a shared cache stores is still fetched once for all the waiters.
    @Test func aShareableAnswerIsStillFetchedOnce() async throws {
        let served = Served()
        let origin = try Self.sessionOrigin(cacheControl: "max-age=60", cookie: false, served: served)
        defer { origin.stop() }
        try await withLarder({ $0.routes = [RouteMount("/p=http://127.0.0.1:\(origin.port)")!] }) { larder in
            let responses = try await withThrowingTaskGroup(of: TestResponse.self) { group in
                for _ in 0..<10 { group.addTask { try await larder.get("/p/page") } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(responses.allSatisfy { $0.status == 200 && $0.text == "visitor 1" })
            #expect(served.count.withLock { $0 } == 1)
            #expect(responses.filter { $0.header("Cache-Status")?.contains("collapsed") == true }.count >= 5)
        }
    }
}
