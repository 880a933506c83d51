import LoopGuests
import Testing

/// A reactor that records the timers its guests set and serves nothing else: enough to see
/// what `LoopDeadlines` asks of its loop without running one.
private final class TimerOnlyReactor: LoopReactor, @unchecked Sendable {
    private var guests: [ObjectIdentifier: any LoopGuest] = [:]
    /// Each `setTimer`'s milliseconds, in order (nil: cancelled).
    var timers: [Int?] = []

    var isCurrent: Bool { true }

    func guest(for key: ObjectIdentifier, make: () -> any LoopGuest) -> any LoopGuest {
        if let known = guests[key] { return known }
        let made = make()
        guests[key] = made
        return made
    }

    func watch(_ fd: Int32, readable: Bool, writable: Bool, for key: ObjectIdentifier) {}
    func setTimer(milliseconds: Int?, for key: ObjectIdentifier) { timers.append(milliseconds) }
    func afterTurn(_ work: @escaping () -> Void) { work() }
    func enqueue(_ job: consuming ExecutorJob) { job.runSynchronously(on: asUnownedTaskExecutor()) }
}

@Suite struct LoopDeadlinesTests {
    @Test func aLoopHasOneSetOfDeadlines() {
        let reactor = TimerOnlyReactor()
        #expect(LoopDeadlines.on(reactor) === LoopDeadlines.on(reactor))
    }

    @Test func aDeadlineFiresOnceDueAndTheTimerFollowsTheNextOne() throws {
        let reactor = TimerOnlyReactor()
        let deadlines = LoopDeadlines.on(reactor)
        var fired: [String] = []
        deadlines.after(.seconds(60)) { fired.append("late") }
        let armed = try #require(reactor.timers.last ?? nil)
        #expect((59_000...60_000).contains(armed))
        deadlines.after(.zero) { fired.append("now") }
        #expect(reactor.timers.last == 0)
        deadlines.timerFired()
        #expect(fired == ["now"])
        let rearmed = try #require(reactor.timers.last ?? nil)
        #expect(rearmed > 50_000)
        // A loop that ends lets nothing wait for it.
        deadlines.loopEnded()
        #expect(fired == ["now", "late"])
    }
}
