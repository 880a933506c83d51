/// What an event loop lends the components that run beside the HTTP server on its thread
/// (the upstream client's libcurl): descriptors watched in the loop's epoll and a timer.
/// Their I/O then needs no thread of its own, and a finished exchange wakes only the loop
/// its Task runs on. The two modules meet here and know nothing else of each other.
///
/// Every method but `isCurrent` is for the loop's thread. A Task that outlived its loop runs
/// elsewhere: there `watch` and `setTimer` do nothing and `afterTurn` runs its work at once.
public protocol LoopReactor: TaskExecutor {
    /// True on the loop's own thread, while the loop runs.
    var isCurrent: Bool { get }

    /// The component's guest on this loop, made by `make` on first use.
    func guest(for key: ObjectIdentifier, make: () -> any LoopGuest) -> any LoopGuest

    /// Watches `fd` for the given readiness, for the guest under `key`; both false stops watching.
    func watch(_ fd: Int32, readable: Bool, writable: Bool, for key: ObjectIdentifier)

    /// Calls the guest's `timerFired` once `milliseconds` have passed; nil cancels the timer.
    func setTimer(milliseconds: Int?, for key: ObjectIdentifier)

    /// Runs `work` once the loop has written the responses this turn finished, before it
    /// next sleeps: for handing work to other threads (a disk write) without waking them
    /// ahead of the answer.
    func afterTurn(_ work: @escaping () -> Void)
}

/// A component living on one event loop (see `LoopReactor`); called only on that loop's thread.
public protocol LoopGuest: AnyObject {
    /// `fd`, watched for this guest, is ready.
    func ready(_ fd: Int32, readable: Bool, writable: Bool, failed: Bool)
    /// The timer this guest set is due.
    func timerFired()
    /// The loop is ending: whatever the guest still has in progress must end now, since its
    /// descriptors and timer will not be served again.
    func loopEnded()
}
