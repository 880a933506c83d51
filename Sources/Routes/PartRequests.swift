import Caching
import HTTPCore
import HTTPServer

/// The parts' cache requests an aggregate made for a request, kept by what they were made
/// of: its target, version and fields (and the client's address where a part's route adds
/// it to `X-Forwarded-For`). The same request again gets the same parts' requests without
/// reading its query, making each part's target and running each route's rules: under perf
/// those were a third of an aggregate of memory hits. Bounded: at about 1,024 requests it
/// starts again. Only a request whose every part was located is kept (a refusal is made anew).
final class PartRequests: Sendable {
    typealias Located = [Result<LarderRoutes.Part, HTTPResponseError>]
    private struct Made {
        let version: HTTPVersion
        let client: String
        let headers: HTTPHeaders
        let located: Located
    }
    /// Each request is counted as a KiB: what its parts' requests hold, roughly.
    private let made = BoundedMemo<String, Made>(budget: 1 << 20)
    /// Whether the client's address is part of what a part's request is made of.
    private let readsClient: Bool

    init(readsClient: Bool) { self.readsClient = readsClient }

    /// The parts' requests made before for an equal request, or nil.
    func located(for request: HTTPRequest) -> Located? {
        guard let known = made[request.target], known.version == request.version, known.headers == request.headers,
              !readsClient || known.client == request.clientAddress else { return nil }
        return known.located
    }

    /// Keeps what every part's route made of the request, when none refused it.
    func keep(_ located: Located, for request: HTTPRequest) {
        guard located.allSatisfy({ (try? $0.get()) != nil }) else { return }
        made.keep(Made(version: request.version, client: readsClient ? request.clientAddress : "", headers: request.headers, located: located),
                  for: request.target, cost: 1024)
    }
}
