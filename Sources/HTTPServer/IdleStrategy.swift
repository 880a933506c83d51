/// How an event loop waits once nothing is ready: the server's one idle setting.
///
/// A loop never polls (spins looking for work): a spinning loop keeps its core busy, which a
/// CPU limit charges and a CPU-based autoscaler reads as load.
public enum IdleStrategy: Sendable {
    /// Sleep in `epoll_wait` as soon as nothing is ready.
    case sleep
    /// After a turn that heard from a caller (read a request's bytes, accepted a connection)
    /// or left a connection waiting for more of a streamed body, when the loop has nothing of
    /// its own queued, give the core away once (`sched_yield`), then wait in `epoll_wait`.
    /// A loop under load always finds events, so the kernel would take its core only at a
    /// scheduler tick; a client on the same host or Larder's own disk and log writers would
    /// wait that long (`TurnYielding`, which also stops yielding to CPU-bound work).
    case yieldThenSleep
}
