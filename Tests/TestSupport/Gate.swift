import Synchronization
import Locking

/// Holds work until a test opens it: `wait` suspends (no polling) while the gate is closed
/// and returns at once while it is open. Tests use it to keep upstream calls in flight.
public final class Gate: Sendable {
    private let state: Locked<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>

    public init(open: Bool) { state = Locked((open, [])) }

    public func wait() async {
        await withCheckedContinuation { continuation in
            let open = state.withLock { state in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }

    public func close() { state.withLock { $0.open = false } }

    public func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }
}
