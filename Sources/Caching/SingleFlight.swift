import HTTPCore
import Synchronization

/// At most one piece of work per key at a time: the first caller starts it, later callers
/// for the same key wait on continuations and are resumed with the same result when it
/// ends. No polling, and the work runs in a task of its own, so a caller going away does
/// not cancel it for the others.
final class SingleFlight<Outcome: Sendable>: Sendable {
    private struct Waiter {
        let continuation: CheckedContinuation<(Outcome, collapsed: Bool), Never>
        let collapsed: Bool
    }

    private let flights = Mutex<[String: [Waiter]]>([:])

    /// The outcome of the flight for `key`, starting it with `work` when none is in flight.
    /// `collapsed` is true for callers that joined another caller's flight.
    func run(_ key: String, _ work: @escaping @Sendable () async -> Outcome) async -> (Outcome, collapsed: Bool) {
        await withCheckedContinuation { continuation in
            let starts = flights.withLock { flights in
                if flights[key] != nil {
                    flights[key]!.append(Waiter(continuation: continuation, collapsed: true))
                    return false
                }
                flights[key] = [Waiter(continuation: continuation, collapsed: false)]
                return true
            }
            if starts { launch(key, work) }
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

    private func launch(_ key: String, _ work: @escaping @Sendable () async -> Outcome) {
        // On the caller's event loop, when it has one: the work's awaits come back there.
        Task(executorPreference: LoopExecutor.current) { [self] in
            let outcome = await work()
            let waiters = flights.withLock { $0.removeValue(forKey: key) ?? [] }
            for waiter in waiters { waiter.continuation.resume(returning: (outcome, waiter.collapsed)) }
        }
    }
}
