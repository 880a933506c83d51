import HTTPCore
#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// The loop's one yield site (`IdleStrategy.yieldThenSleep`): where a loop that may have a
/// caller waiting for its core gives the core away before it waits for events.
extension EventLoop {
    /// Waits for events. With `yieldDue` set (this turn heard from a caller, or left a
    /// connection waiting for more of a streamed body) and a wait ahead (`wait` not 0), the
    /// loop first gives its core away once (`sched_yield`) unless `turnYielding` pauses
    /// yields, so a thread waiting for that core runs now rather than at the next tick.
    ///
    /// A turn that only finished work begun earlier (an answer made in a Task, an
    /// upstream's reply, a timer) waits at once: yielding there, just after a miss's answer
    /// went out and the disk writer was woken, made the miss's caller wait longer.
    func waitForEvents(_ events: UnsafeMutablePointer<epoll_event>, wait: Int32) -> Int32 {
        if yieldDue, wait != 0, idleStrategy == .yieldThenSleep { yieldCore() }
        yieldDue = false
        return epoll_wait(epfd, events, Self.maxEvents, wait)
    }

    /// Gives the core away (`sched_yield`) unless `turnYielding` pauses yields, which it does
    /// after a yield that met CPU-bound work and came back late.
    private func yieldCore() {
        let start = MonotonicClock.nanoseconds()
        guard turnYielding.isDue(at: start) else { return }
        sched_yield()
        turnYielding.yielded(at: start, backAt: MonotonicClock.nanoseconds())
    }
}
