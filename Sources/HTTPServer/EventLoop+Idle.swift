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
    /// next tick, looks once without waiting, and yields once more before it sleeps.
    ///
    /// A turn that only finished work begun earlier (an answer made in a Task, an
    /// upstream's reply, a timer) sleeps at once: yielding there, just after a miss's answer
    /// went out and the disk writer was woken, made the miss's caller wait longer.
    func yieldBeforeSleeping(_ events: UnsafeMutablePointer<epoll_event>, wait: Int32) -> Int32 {
        yieldCore()
        // One look without waiting, and one more yield before sleeping when it finds nothing:
        // the caller just answered often sends its next request in that moment, and without
        // them a memory hit costs more server CPU (bench cell: hot key, server CPU µs/req).
        let ready = epoll_wait(epfd, events, Self.maxEvents, 0)
        if ready != 0 { return ready }
        sched_yield()
        return epoll_wait(epfd, events, Self.maxEvents, wait)
    }

    /// Gives the core away (`sched_yield`) unless `turnYielding` pauses yields, which it does
    /// after a yield that met CPU-bound work and came back late.
    func yieldCore() {
        let start = MonotonicClock.nanoseconds()
        guard turnYielding.isDue(at: start) else { return }
        sched_yield()
        turnYielding.yielded(at: start, backAt: MonotonicClock.nanoseconds())
    }
}
