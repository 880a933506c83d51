import Synchronization
import Caching
import Foundation
import HTTPCore
import LoopGuests
import HTTPServer
import Locking
import Testing
import TestSupport
@testable import Routes

/// Where an aggregate's parts are looked up: on the loop that took the request, where its
/// deadline is kept.
@Suite(.timeLimit(.minutes(1))) struct AggregatePartLoopTests {
    /// Notes, for each fetch, whether it ran on an event loop's own thread.
    final class LoopNotingFetcher: CacheFetcher {
        let onLoop = Locked<[Bool]>([])

        func fetch(_ request: CacheRequest) async throws -> CacheEntry {
            onLoop.withLock { $0.append(LoopExecutor.reactor != nil) }
            return CacheEntry(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=60")]), body: Array("{}".utf8),
                              requestTime: Date(), responseTime: Date())
        }
    }

    /// On the global pool, a pool kept busy by other work (a loaded `make test`) made a part
    /// miss its deadline though its answer had arrived.
    @Test func aPartIsLookedUpOnTheLoopThatTookTheRequest() async throws {
        let fetcher = LoopNotingFetcher()
        let cache = Cache(route: "test", policy: CachePolicy(defaultLifetime: 60), memory: MemoryTier(budget: 1 << 20), disk: nil,
                          fetcher: fetcher) { _, entry in RenderedResponse(relaying: entry) }
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.eventLoops = 1
        let server = HTTPServer(configuration: configuration) { request in
            .later {
                let part = LarderRoutes.Part(name: "part", cache: cache, request: CacheRequest(resource: String(request.path), directives: .none))
                let ended = await Aggregate.gather([part], deadline: .seconds(30))
                return HTTPResponse(status: ended[0] == nil ? 504 : 200)
            }
        }
        try server.start()
        // Its client is gone before the server stops: an open connection holds the stop for its grace.
        let status = try await TestClient.get(server.port!, "/a").status
        await server.shutdown()
        #expect(status == 200)
        #expect(fetcher.onLoop.withLock { $0 } == [true])
    }
}
