import HTTPCore
#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// How a loop that has just heard from a caller waits for the next one (`IdleStrategy.yieldThenSleep`).
extension EventLoop {
    /// The wait of a loop whose last turn heard from a caller (`heardFromCaller`: a
    /// request's bytes, a new connection): it gives its core away (`sched_yield`) when
    /// `turnYielding` says so, so a thread waiting for that core runs now rather than at the
    /// next tick, then waits as any loop does (at once, if events are ready).
    ///
    /// A turn that only finished work begun earlier (an answer made in a Task, an
    /// upstream's reply, a timer) sleeps at once: yielding there, just after a miss's answer
    /// went out and the disk writer was woken, made the miss's caller wait longer.
    func yieldBeforeSleeping(_ events: UnsafeMutablePointer<epoll_event>, wait: Int32) -> Int32 {
        let start = MonotonicClock.nanoseconds()
        if turnYielding.isDue(at: start) {
            sched_yield()
            turnYielding.yielded(at: start, backAt: MonotonicClock.nanoseconds())
        }
        return epoll_wait(epfd, events, Self.maxEvents, wait)
    }
}
