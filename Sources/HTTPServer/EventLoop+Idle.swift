import HTTPCore
#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// How a loop that has just heard from a caller waits for the next one.
extension EventLoop {
    /// The wait of a loop whose last turn heard from a caller (`heardFromCaller`: a
    /// request's bytes, a new connection). First it gives its core away (`sched_yield`)
    /// when `turnYielding` says so, so a thread waiting for that core runs now rather than
    /// at the next tick. Then, since under load the next request is usually a moment away
    /// and sleeping in `epoll_wait` and being woken again costs more than a cached answer,
    /// it looks without waiting, once and then for as long as `idlePolling` has learnt
    /// pays, letting every other runnable thread of the process go first between looks (a
    /// yield is a no-op on an idle core); only then does it sleep. It polls past the first
    /// look only with one of the server's polling slots (`PollingSlots`: all loops but one).
    ///
    /// A turn that only finished work begun earlier (an answer made in a Task, an
    /// upstream's reply, a timer) says nothing about when the next request comes, so after
    /// it the loop sleeps at once, as an idle loop does. Polling and yielding there, just
    /// after a miss's answer went out and the disk writer was woken, made the miss's caller
    /// wait longer.
    func pollBeforeSleeping(_ events: UnsafeMutablePointer<epoll_event>, wait: Int32) -> Int32 {
        var idleSince = MonotonicClock.nanoseconds()
        if turnYielding.isDue(at: idleSince) {
            sched_yield()
            let back = MonotonicClock.nanoseconds()
            turnYielding.yielded(at: idleSince, backAt: back)
            idleSince = back
        }
        // Without a slot the loop looks once, as with a closed window, and sleeps. The slot
        // is given back before the sleep: a sleeping loop must not keep another from polling.
        let slot = idlePolling.window > 0 && shared.pollingSlots.take()
        var ready: Int32
        repeat {
            ready = epoll_wait(epfd, events, Self.maxEvents, 0)
            if ready != 0 { break }
            sched_yield()
        } while slot && MonotonicClock.nanoseconds() &- idleSince < idlePolling.window
        if slot { shared.pollingSlots.give() }
        if ready != 0 { return ready }
        ready = epoll_wait(epfd, events, Self.maxEvents, wait)
        idlePolling.woke(afterIdling: MonotonicClock.nanoseconds() &- idleSince)
        return ready
    }
}
