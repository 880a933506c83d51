import Dispatch
import Synchronization

/// The end of a thread of its own, for a stop to await: the thread calls `exited()` as its
/// last act, and `wait(atMost:)` returns once it has (at once, if it already had), or once
/// the limit has passed: a thread blocked where no stop flag reaches it (a connect to a host
/// that drops packets, a write to a pipe nobody reads) must not hold the stop past its time.
public final class ThreadExit: Sendable {
    private struct State {
        var exited = false
        var waiters: [Int: CheckedContinuation<Bool, Never>] = [:]
        var next = 0
    }

    private let state = Locked(State())

    public init() {}

    public func exited() {
        let waiters = state.withLock { state in
            state.exited = true
            defer { state.waiters = [:] }
            return state.waiters.values
        }
        waiters.forEach { $0.resume(returning: true) }
    }

    /// Whether the thread ended within `limit`.
    public func wait(atMost limit: Duration) async -> Bool {
        await withCheckedContinuation { continuation in
            let ticket = state.withLock { state -> Int? in
                guard !state.exited else { return nil }
                state.next += 1
                state.waiters[state.next] = continuation
                return state.next
            }
            guard let ticket else { return continuation.resume(returning: true) }
            let (seconds, attoseconds) = limit.components
            let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [self] in
                state.withLock { $0.waiters.removeValue(forKey: ticket) }?.resume(returning: false)
            }
        }
    }

    public var hasExited: Bool { state.withLock { $0.exited } }
}
