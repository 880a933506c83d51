import Caching
import HTTPCore
import HTTPServer
import Synchronization

/// The parts' cache requests an aggregate made for a request, kept by what they were made
/// of: its target, version and fields (and the client's address where a part's route adds
/// it to `X-Forwarded-For`). The same request again gets the same parts' requests without
/// reading its query, making each part's target and running each route's rules: under perf
/// those were a third of an aggregate of memory hits. Bounded: at 1,024 requests it starts
/// again. Only a request whose every part was located is kept (a refusal is made anew).
final class PartRequests: Sendable {
    private static let limit = 1024
    private struct Made {
        let version: HTTPVersion
        let client: String
        let headers: HTTPHeaders
        let lookups: [LarderRoutes.Part]
    }
    private let made = Mutex<[String: Made]>([:])
    /// Whether the client's address is part of what a part's request is made of.
    private let readsClient: Bool

    init(readsClient: Bool) { self.readsClient = readsClient }

    /// The parts' requests made before for an equal request, or nil.
    func lookups(for request: HTTPRequest) -> [LarderRoutes.Part]? {
        guard let known = made.withLock({ $0[request.target] }), known.version == request.version, known.headers == request.headers,
              !readsClient || known.client == request.clientAddress else { return nil }
        return known.lookups
    }

    func keep(_ lookups: [LarderRoutes.Part], for request: HTTPRequest) {
        let kept = Made(version: request.version, client: readsClient ? request.clientAddress : "", headers: request.headers, lookups: lookups)
        made.withLock { made in
            if made.count >= Self.limit { made.removeAll(keepingCapacity: true) }
            made[request.target] = kept
        }
    }
}
