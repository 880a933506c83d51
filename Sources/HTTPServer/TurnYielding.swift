/// Whether an event loop that has just handled events gives its core away before it looks
/// for more.
///
/// A loop under load always finds events ready, so it never sleeps, and the scheduler takes
/// its core from it only at a tick (every 4 ms with `CONFIG_HZ=250`). Any other thread
/// waiting for that core waits until then: a client on the same host, or the process's own
/// disk or log writer. At 64 connections that wait was the p99. So a busy loop yields
/// (`sched_yield`) before each look: a thread with work ready runs now, and a loop alone
/// on its core is back at once.
///
/// A thread that does not stop by itself (CPU-bound work sharing the core) keeps a yielded
/// core until the next tick, and yielding to it after every turn would hand it most of the
/// loop's share. So a yield that comes back late (after more than `longest`) starts a pause
/// with no yields: 4 ms at first, doubling with each late yield up to 256 ms, and cleared
/// by a yield that comes back in time.
struct TurnYielding {
    /// A yield that took longer than this met CPU-bound work, in nanoseconds: a thread that
    /// handles what it was woken for and blocks again is back within it (wrk's batches at 256
    /// connections take one to two milliseconds), and CPU-bound work keeps a yielded core to
    /// the next tick (4 ms). At 1 ms the loops took wrk's larger batches for CPU-bound work,
    /// paused, and p99 at 256 connections was the tick (bench cell: hot key, 256 connections,
    /// p99).
    static let longest: UInt64 = 2_000_000
    static let firstPause: UInt64 = 4_000_000
    static let longestPause: UInt64 = 256_000_000

    /// No yield before this instant (monotonic nanoseconds).
    private(set) var resumeAt: UInt64 = 0
    /// The current pause, 0 when the last yield came back in time.
    private(set) var pause: UInt64 = 0

    func isDue(at now: UInt64) -> Bool { now >= resumeAt }

    /// The loop yielded at `start` and was running again at `end`.
    mutating func yielded(at start: UInt64, backAt end: UInt64) {
        guard end &- start > Self.longest else {
            pause = 0
            return
        }
        pause = min(Self.longestPause, max(pause &* 2, Self.firstPause))
        resumeAt = end &+ pause
    }
}
