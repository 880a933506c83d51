/// How long an event loop that has just handled events keeps looking for more before it
/// sleeps in `epoll_wait`.
///
/// Waking a sleeping thread costs more than answering from the cache: an interrupt to its
/// core and a context switch, and in a virtual machine an exit to the hypervisor and back
/// (about 30 µs per wake on the machine `make bench` was written on). Under load the next
/// request is often tens of microseconds away, so a loop that sleeps whenever it runs dry
/// pays that every few requests, and a caller that sends one request at a time pays it on
/// every one. So the loop polls first, for a window it learns the way Linux's haltpoll
/// governor learns its own:
/// - a sleep that ended within `limit` of the loop going idle would have been caught by
///   polling longer: the window doubles, from a quarter of the limit, up to the limit;
/// - a longer sleep means the polling was waste: the window halves, and is dropped once
///   it is under an eighth of the limit.
///
/// A loop whose requests come further apart than `limit` stops polling after a few sleeps;
/// one whose requests come closer keeps its core busy. A limit of 0 keeps the window at 0:
/// the loop looks once without waiting, then sleeps.
struct IdlePolling {
    /// The longest window, in nanoseconds.
    let limit: UInt64
    /// How long the loop polls next time it goes idle, in nanoseconds.
    private(set) var window: UInt64 = 0

    init(limit: UInt64) {
        self.limit = limit
    }

    /// The loop went idle, polled for `window` without finding anything, then slept:
    /// `idle` is the time from going idle to waking (for an event, a wake or its tick).
    mutating func woke(afterIdling idle: UInt64) {
        guard limit > 0 else { return }
        if idle <= limit {
            window = min(limit, max(window &* 2, limit / 4))
        } else {
            window /= 2
            if window < limit / 8 { window = 0 }
        }
    }
}
