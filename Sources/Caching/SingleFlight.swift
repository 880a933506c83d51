import HTTPCore
import LoopGuests
import Synchronization
import Locking
import RequestTracing

/// At most one piece of work per key at a time: the first caller runs it, later callers
/// for the same key wait on continuations and are resumed with the same result when it
/// ends. No polling.
///
/// The first caller runs the work in its own task rather than in a Task made for it: that
/// Task was one more allocation, start and resumption on every miss. Nothing in Larder
/// cancels the task of a request, so the work is not cut short by the caller it runs in;
/// were that caller cancelled, those who joined would get its outcome (an upstream
/// failure), never wait forever. Work nobody waits for (`startIfIdle`) gets a Task of its
/// own.
final class SingleFlight<Outcome: Sendable>: Sendable {
    /// Callers waiting for the flight of their key; nil when it ended before they joined.
    private typealias Waiter = CheckedContinuation<Outcome?, Never>

    private let flights = Locked<[String: [Waiter]]>([:])

    /// The outcome of the flight for `key`, running `work` when none is in flight.
    /// `collapsed` is true for callers that joined another caller's flight.
    func run(_ key: String, _ work: () async -> Outcome) async -> (Outcome, collapsed: Bool) {
        while true {
            let leads = flights.withLock { flights in
                guard flights[key] == nil else { return false }
                flights[key] = []
                return true
            }
            if leads {
                let outcome = await work()
                finish(key, outcome)
                return (outcome, false)
            }
            // A traced request's wait on another's fetch is a span of its own.
            let joined = if let trace = Trace.current { await trace.span("collapsed wait") { _ in await join(key) } } else { await join(key) }
            if let joined { return (joined, true) }
        }
    }

    /// Waits for the flight for `key` to end; nil when it ended before this caller joined.
    private func join(_ key: String) async -> Outcome? {
        await withCheckedContinuation { (continuation: Waiter) in
            let waits = flights.withLock { flights in
                guard flights[key] != nil else { return false }
                flights[key]!.append(continuation)
                return true
            }
            // The flight ended between the two looks: lead the next one.
            if !waits { continuation.resume(returning: nil) }
        }
    }

    /// Starts a flight for `key` unless one is already in flight; nobody waits for it.
    func startIfIdle(_ key: String, _ work: @escaping @Sendable () async -> Outcome) {
        let starts = flights.withLock { flights in
            guard flights[key] == nil else { return false }
            flights[key] = []
            return true
        }
        if starts { launch(key, work) }
    }

    var inFlight: Int { flights.withLock { $0.count } }

    /// Callers waiting on the flight for `key` (tests).
    func waiting(_ key: String) -> Int { flights.withLock { $0[key]?.count ?? 0 } }

    /// Callers waiting on any flight (tests).
    var waiting: Int { flights.withLock { $0.values.reduce(0) { $0 + $1.count } } }

    private func launch(_ key: String, _ work: @escaping @Sendable () async -> Outcome) {
        // On the caller's event loop, when it has one: the work's awaits come back there.
        Task(executorPreference: LoopExecutor.current) { [self] in finish(key, await work()) }
    }

    /// Ends the flight for `key`, resuming everyone who joined it.
    private func finish(_ key: String, _ outcome: Outcome) {
        let waiters = flights.withLock { $0.removeValue(forKey: key) ?? [] }
        for waiter in waiters { waiter.resume(returning: outcome) }
    }
}
