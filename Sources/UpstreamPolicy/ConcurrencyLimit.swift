import Synchronization
import Locking

/// At most `limit` requests in flight to one upstream; the next `queueLimit` wait their
/// turn in arrival order, and any beyond that are refused at once rather than piling up
/// (`--upstream-concurrency`). Waiters are resumed by `release`, never by polling, and a
/// waiter waits no longer than it was given: its wait is part of its upstream timeout.
public final class ConcurrencyLimit: Sendable {
    /// The queue is full: the request is refused without reaching the upstream.
    struct Full: Error {}
    /// No slot came free within the time given: as a timeout of the upstream exchange.
    struct WaitedTooLong: Error {}

    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var inFlight = 0
        var waiting: [Waiter] = []
        var nextID: UInt64 = 0
    }

    let limit: Int
    let queueLimit: Int
    private let state = Locked(State())

    public init(limit: Int, queueLimit: Int) {
        self.limit = max(1, limit)
        self.queueLimit = max(0, queueLimit)
    }

    /// Runs `work` once a slot is free, waiting at most `patience` for it; `work` is told how
    /// long it waited.
    func run<T>(waitingAtMost patience: Duration, _ work: (_ waited: Duration) async throws -> T) async throws -> T {
        let started = ContinuousClock.now
        try await acquire(patience)
        defer { release() }
        return try await work(ContinuousClock.now - started)
    }

    private enum Admission { case now, queued, refused }

    private func acquire(_ patience: Duration) async throws {
        // A free slot is taken without suspending: a suspension is a trip through the
        // executor (and, before, a hop of the whole miss) for nothing.
        var admission = state.withLock { admit(&$0, nil) }
        guard admission == .queued else {
            if admission == .refused { throw Full() }
            return
        }
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        let timer = Task { [self] in
            try? await Task.sleep(for: patience)
            if !Task.isCancelled { expire(id) }
        }
        defer { timer.cancel() }
        let slot = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            admission = state.withLock { admit(&$0, (id, continuation)) }
            if admission != .queued { continuation.resume(returning: admission == .now) }
        }
        if admission == .refused { throw Full() }
        if !slot { throw WaitedTooLong() }
    }

    /// Takes a slot, or queues `continuation` when the queue has room: with none given, only
    /// says whether it would be queued.
    private func admit(_ state: inout State, _ waiter: (id: UInt64, continuation: CheckedContinuation<Bool, Never>)?) -> Admission {
        if state.inFlight < limit {
            state.inFlight += 1
            return .now
        }
        guard state.waiting.count < queueLimit else { return .refused }
        if let waiter { state.waiting.append(Waiter(id: waiter.id, continuation: waiter.continuation)) }
        return .queued
    }

    /// A waiter whose time is up leaves the queue without a slot (if it is still there).
    private func expire(_ id: UInt64) {
        let expired = state.withLock { state -> Waiter? in
            guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiting.remove(at: index)
        }
        expired?.continuation.resume(returning: false)
    }

    /// Hands the slot to the longest waiter, or frees it.
    private func release() {
        let next = state.withLock { state -> Waiter? in
            guard !state.waiting.isEmpty else {
                state.inFlight -= 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.continuation.resume(returning: true)
    }

    var inFlight: Int { state.withLock { $0.inFlight } }
    var queued: Int { state.withLock { $0.waiting.count } }
}
