@testable import HTTPServer
import Foundation
import Synchronization
import Testing

/// All loops but one may poll at once, and never fewer than one.
@Suite struct PollingSlotsTests {
    @Test func aServerLeavesOneLoopOutOfPollingWhenItHasMoreThanOne() {
        #expect(PollingSlots(loops: 1).limit == 1)
        #expect(PollingSlots(loops: 2).limit == 1)
        #expect(PollingSlots(loops: 8).limit == 7)
    }

    @Test func aSlotGivenBackCanBeTakenAgain() {
        let slots = PollingSlots(loops: 3)
        #expect(slots.take())
        #expect(slots.take())
        #expect(!slots.take(), "both slots are taken")
        #expect(slots.inUse == 2)
        slots.give()
        #expect(slots.take())
        slots.give()
        slots.give()
        #expect(slots.inUse == 0)
    }

    @Test func threadsTakingAtOnceNeverHoldMoreThanTheLimit() async {
        let slots = PollingSlots(loops: 2)
        let seen = Holders()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<20_000 where slots.take() {
                        let now = seen.holding.add(1, ordering: .relaxed).newValue
                        seen.most.max(now, ordering: .relaxed)
                        seen.holding.subtract(1, ordering: .relaxed)
                        slots.give()
                    }
                }
            }
        }
        #expect(seen.most.load(ordering: .relaxed) == 1)
        #expect(slots.inUse == 0)
    }

    /// How many tasks hold a slot now, and the most that ever did.
    final class Holders: Sendable {
        let holding = Atomic<Int>(0)
        let most = Atomic<Int>(0)
    }
}
