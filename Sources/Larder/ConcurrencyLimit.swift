import Synchronization

/// At most `limit` requests in flight to one upstream; the next `queueLimit` wait their
/// turn in arrival order, and any beyond that are refused at once rather than piling up
/// (`--upstream-concurrency`). Waiters are resumed by `release`, never by polling.
final class ConcurrencyLimit: Sendable {
    /// The queue is full: the request is refused without reaching the upstream.
    struct Full: Error {}

    private struct State {
        var inFlight = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    let limit: Int
    let queueLimit: Int
    private let state = Mutex(State())

    init(limit: Int, queueLimit: Int) {
        self.limit = max(1, limit)
        self.queueLimit = max(0, queueLimit)
    }

    /// Runs `work` once a slot is free.
    func run<T>(_ work: () async throws -> T) async throws -> T {
        try await acquire()
        defer { release() }
        return try await work()
    }

    private enum Admission { case now, queued, refused }

    private func acquire() async throws {
        // A free slot is taken without suspending: a suspension is a trip through the
        // executor (and, before, a hop of the whole miss) for nothing.
        var admission = state.withLock { admit(&$0, nil) }
        if admission == .queued {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                admission = state.withLock { admit(&$0, continuation) }
                if admission != .queued { continuation.resume() }
            }
        }
        if admission == .refused { throw Full() }
    }

    /// Takes a slot, or queues `continuation` when the queue has room: with none given, only
    /// says whether it would be queued.
    private func admit(_ state: inout State, _ continuation: CheckedContinuation<Void, Never>?) -> Admission {
        if state.inFlight < limit {
            state.inFlight += 1
            return .now
        }
        guard state.waiting.count < queueLimit else { return .refused }
        if let continuation { state.waiting.append(continuation) }
        return .queued
    }

    /// Hands the slot to the longest waiter, or frees it.
    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.inFlight -= 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }

    var inFlight: Int { state.withLock { $0.inFlight } }
    var queued: Int { state.withLock { $0.waiting.count } }
}
