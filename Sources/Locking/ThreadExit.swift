import Synchronization

/// The end of a thread of its own, for a stop to await: the thread calls `exited()` as its
/// last act, and `wait()` returns once it has (at once, if it already had).
public final class ThreadExit: Sendable {
    private let state = Locked((exited: false, waiters: [CheckedContinuation<Void, Never>]()))

    public init() {}

    public func exited() {
        let waiters = state.withLock { state in
            state.exited = true
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }

    public func wait() async {
        await withCheckedContinuation { continuation in
            let exited = state.withLock { state in
                if !state.exited { state.waiters.append(continuation) }
                return state.exited
            }
            if exited { continuation.resume() }
        }
    }

    public var hasExited: Bool { state.withLock { $0.exited } }
}
