import Foundation
import HTTPCore
import Bodies
import Synchronization
import TestSupport
@testable import Caching
import Locking

/// The one fake upstream of the cache tests: answers from a script (one reply, or a closure
/// over the request), records every request it was sent, and can hold every fetch behind a
/// gate until the test opens it.
final class ScriptedUpstream: CacheFetcher {
    struct Reply: Sendable {
        var status = 200
        var headers: [(String, String)] = [("Cache-Control", "max-age=60"), ("ETag", "\"v1\"")]
        var body = "{\"v\":1}"
        var error: UpstreamFailure?
    }

    /// One request as it reached the upstream.
    struct Sent: Sendable {
        let method: HTTPMethod
        let url: String
        let headers: HTTPHeaders
        let body: [UInt8]?
    }

    private let state = Locked<(sent: [Sent], reply: @Sendable (Sent) -> Reply)>(([], { _ in Reply() }))
    private let gate = Gate(open: true)
    let clock: ManualClock

    init(clock: ManualClock) { self.clock = clock }

    var requests: [Sent] { state.withLock { $0.sent } }
    var calls: Int { requests.count }
    var lastHeaders: HTTPHeaders { requests.last?.headers ?? [] }

    func reply(_ reply: Reply) { state.withLock { $0.reply = { _ in reply } } }
    func reply(_ answer: @escaping @Sendable (Sent) -> Reply) { state.withLock { $0.reply = answer } }
    /// Changes the current (fixed) reply.
    func change(_ edit: (inout Reply) -> Void) {
        var reply = state.withLock { $0.reply }(Sent(method: .get, url: "", headers: [], body: nil))
        edit(&reply)
        self.reply(reply)
    }

    func closeGate() { gate.close() }
    func openGate() { gate.open() }

    func fetch(_ request: CacheRequest) async throws -> CacheEntry {
        let sent = Sent(method: request.method, url: request.url, headers: request.headers, body: request.body?.inMemory)
        let reply = state.withLock { state in
            state.sent.append(sent)
            return state.reply(sent)
        }
        await gate.wait()
        if let error = reply.error { throw error }
        let now = clock.now()
        return CacheEntry(status: reply.status, headers: HTTPHeaders(reply.headers),
                          body: request.method == .head ? [] : Array(reply.body.utf8), requestTime: now, responseTime: now)
    }
}

extension RenderedResponse {
    /// What the cache tests render: the entry's body as it is, for any route.
    static func plain(_ entry: CacheEntry) -> RenderedResponse {
        RenderedResponse(relaying: entry)
    }
}
