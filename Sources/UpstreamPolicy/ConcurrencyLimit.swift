import Synchronization
import Locking

/// At most `limit` requests in flight to one upstream; the next `queueLimit` wait their
/// turn in arrival order, and any beyond that are refused at once rather than piling up
/// (`--upstream-concurrency`). Waiters are resumed by `release`, never by polling, and a
/// waiter waits no longer than it was given. Both refusals are Larder's own saturation,
/// never the upstream's failure: it was not asked.
public final class ConcurrencyLimit: Sendable {
    /// The queue is full: the request is refused without reaching the upstream.
    struct Full: Error {}
    /// No slot came free within the time given: the request is refused without reaching the upstream.
    struct WaitedTooLong: Error {}

    private struct Waiter {
        let deadline: ContinuousClock.Instant
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var inFlight = 0
        var waiting: [Waiter] = []
        /// When the one task that expires waiters wakes next; nil when none is running.
        var sweepAt: ContinuousClock.Instant?
    }

    let limit: Int
    let queueLimit: Int
    private let state = Locked(State())

    public init(limit: Int, queueLimit: Int) {
        self.limit = max(1, limit)
        self.queueLimit = max(0, queueLimit)
    }

    /// Runs `work` once a slot is free, waiting at most `patience` for it.
    func run<T>(waitingAtMost patience: Duration, _ work: () async throws -> T) async throws -> T {
        try await acquire(patience)
        defer { release() }
        return try await work()
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
        let deadline = ContinuousClock.now + patience
        let slot = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            var sweep: ContinuousClock.Instant?
            admission = state.withLock { state in
                let admission = admit(&state, Waiter(deadline: deadline, continuation: continuation))
                if admission == .queued, state.sweepAt.map({ deadline < $0 }) ?? true {
                    state.sweepAt = deadline
                    sweep = deadline
                }
                return admission
            }
            if admission != .queued { continuation.resume(returning: admission == .now) }
            if let sweep { startSweeping(at: sweep) }
        }
        if admission == .refused { throw Full() }
        if !slot { throw WaitedTooLong() }
    }

    /// Takes a slot, or queues `waiter` when the queue has room: with none given, only says
    /// whether it would be queued.
    private func admit(_ state: inout State, _ waiter: Waiter?) -> Admission {
        if state.inFlight < limit {
            state.inFlight += 1
            return .now
        }
        guard state.waiting.count < queueLimit else { return .refused }
        if let waiter { state.waiting.append(waiter) }
        return .queued
    }

    /// One task per limit, not one per waiter, wakes at the earliest deadline and turns away
    /// the waiters whose time is up; a waiter with an earlier deadline than the running
    /// task's starts its own. A timer task per queued request cost a task, a timer and a
    /// cancellation per miss (bench cell: scale, miss storm, req/s).
    private func startSweeping(at first: ContinuousClock.Instant) {
        Task { [self] in
            var wake = first
            while true {
                try? await Task.sleep(until: wake, clock: .continuous)
                let (expired, next) = state.withLock { state -> ([Waiter], ContinuousClock.Instant?) in
                    let now = ContinuousClock.now
                    let expired = state.waiting.filter { $0.deadline <= now }
                    if !expired.isEmpty { state.waiting.removeAll { $0.deadline <= now } }
                    // A later task took over (an earlier deadline came); it keeps the rest.
                    guard state.sweepAt == wake else { return (expired, nil) }
                    state.sweepAt = state.waiting.map(\.deadline).min()
                    return (expired, state.sweepAt)
                }
                for waiter in expired { waiter.continuation.resume(returning: false) }
                guard let next else { return }
                wake = next
            }
        }
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
