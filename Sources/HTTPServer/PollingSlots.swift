import Synchronization

/// How many of a server's event loops may poll for work at once before they sleep
/// (`EventLoop.pollBeforeSleeping`): all but one, and at least one.
///
/// A polling loop keeps its core busy while it waits. With every loop polling, a server that
/// has just heard from callers fills every core, and whatever else needs one waits for a
/// scheduler tick: the callers themselves when they run on the same host, and the process's
/// own disk and log writers. A `sched_yield` between looks did not hand the core over: on
/// 2 cores beside wrk (one hot key, 64 connections, five interleaved rounds), two polling
/// loops served a median of 107,400 requests per second, and the same two loops with one
/// polling at a time 124,800. The likely reason is that each service runs in a scheduling
/// group of its own (autogroup, or a container's cgroup), and a yield only lets the loop's
/// own group go first.
///
/// A loop that finds no slot free looks once without waiting, as a loop whose polling
/// window is closed does, and sleeps.
final class PollingSlots: Sendable {
    /// Loops that may poll at once.
    let limit: Int
    private let taken = Atomic<Int>(0)

    init(loops: Int) {
        limit = max(1, loops - 1)
    }

    /// Takes a slot when one is free; a loop that took one gives it back when it stops polling.
    func take() -> Bool {
        var current = taken.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, original) = taken.compareExchange(expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    func give() {
        taken.subtract(1, ordering: .relaxed)
    }

    /// Slots taken now (for tests).
    var inUse: Int { taken.load(ordering: .relaxed) }
}
