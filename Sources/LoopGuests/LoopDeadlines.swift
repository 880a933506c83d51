import HTTPCore

/// Deadlines kept by the event loop a Task runs on (an aggregate's parts, a miss waiting for
/// room in the disk write queue): the loop's own epoll wait ends for them, and what they
/// decide is written in that same turn. With `Task.sleep` a timer thread woke first and then
/// woke the loop, and each wake-up comes late, so one wake-up fewer is a shorter tail for
/// every aggregate that meets its deadline (bench cell: aggregates, one part late, p99).
/// Touched only on its loop's thread.
public final class LoopDeadlines: LoopGuest {
    private var pending: [(due: UInt64, fire: () -> Void)] = []
    /// The loop keeps its guests, so the guest must not keep the loop.
    private unowned let reactor: any LoopReactor

    private init(_ reactor: any LoopReactor) { self.reactor = reactor }

    /// The deadlines of the loop this code runs on, made on first use.
    public static func on(_ reactor: any LoopReactor) -> LoopDeadlines {
        reactor.guest(for: ObjectIdentifier(LoopDeadlines.self)) { LoopDeadlines(reactor) } as! LoopDeadlines
    }

    /// Calls `fire` on the loop once `delay` has passed (or when the loop ends).
    public func after(_ delay: Duration, _ fire: @escaping () -> Void) {
        let nanoseconds = delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
        pending.append((MonotonicClock.nanoseconds() &+ UInt64(max(0, nanoseconds)), fire))
        arm()
    }

    public func timerFired() {
        let now = MonotonicClock.nanoseconds()
        let due = pending.filter { $0.due <= now }
        pending.removeAll { $0.due <= now }
        for deadline in due { deadline.fire() }
        arm()
    }

    public func ready(_ fd: Int32, readable: Bool, writable: Bool, failed: Bool) {}

    /// Nothing may wait for a loop that is gone: every deadline passes now.
    public func loopEnded() {
        let all = pending
        pending = []
        for deadline in all { deadline.fire() }
    }

    private func arm() {
        guard let next = pending.map(\.due).min() else { return reactor.setTimer(milliseconds: nil, for: ObjectIdentifier(LoopDeadlines.self)) }
        let now = MonotonicClock.nanoseconds()
        let milliseconds = next > now ? Int((next - now + 999_999) / 1_000_000) : 0
        reactor.setTimer(milliseconds: milliseconds, for: ObjectIdentifier(LoopDeadlines.self))
    }
}
