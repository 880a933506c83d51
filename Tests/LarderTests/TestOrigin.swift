import Foundation
import HTTPServer
import Synchronization
import Locking

/// An origin for pass-through routes on the project's own server: answers with whatever the
/// test's closure returns and keeps every request it received.
final class TestOrigin: Sendable {
    typealias Respond = @Sendable (HTTPRequest) -> HTTPResponse

    let server: HTTPServer
    private final class Shared: Sendable {
        let respond: Locked<Respond>
        let seen = Locked<[HTTPRequest]>([])
        init(_ respond: @escaping Respond) { self.respond = Locked(respond) }
    }
    private let shared: Shared

    init(maxBodyBytes: Int = HTTPServerConfiguration().maxBodyBytes,
         _ respond: @escaping Respond = { _ in HTTPResponse(status: 200, body: "origin") }) throws {
        let shared = Shared(respond)
        self.shared = shared
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.eventLoops = 1
        configuration.maxBodyBytes = maxBodyBytes
        server = HTTPServer(configuration: configuration) { request in
            shared.seen.withLock { $0.append(request) }
            return .now(shared.respond.withLock { $0 }(request))
        }
        try server.start()
    }

    var url: String { "http://127.0.0.1:\(server.port!)" }
    var requests: [HTTPRequest] { shared.seen.withLock { $0 } }
    func answer(_ respond: @escaping Respond) { shared.respond.withLock { $0 = respond } }
    func stop() async { await server.shutdown() }
}
