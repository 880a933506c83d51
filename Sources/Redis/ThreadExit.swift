import Locking
import Synchronization

/// The end of a thread of its own, for a stop to await: the thread calls `exited()` as its
/// last act, and `wait()` returns once it has (at once, if it already had).
final class ThreadExit: Sendable {
    private let state = Locked((exited: false, waiters: [CheckedContinuation<Void, Never>]()))

    func exited() {
        let waiters = state.withLock { state in
            state.exited = true
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let exited = state.withLock { state in
                if !state.exited { state.waiters.append(continuation) }
                return state.exited
            }
            if exited { continuation.resume() }
        }
    }

    var hasExited: Bool { state.withLock { $0.exited } }
}
