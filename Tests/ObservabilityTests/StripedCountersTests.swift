import CLinux
import Foundation
import Testing
@testable import Observability

/// Counters striped per event loop: every add counts once, whichever thread makes it, and a
/// read sums the stripes.
@Suite struct StripedCountersTests {
    @Test func addsFromLoopsAndOtherThreadsAllCount() {
        let counters = StripedCounters(count: 3, stripes: 3)
        // Slot 0 is any thread that is not a loop; slot 5 is more loops than stripes.
        let slots: [UInt32] = [0, 0, 1, 2, 5]
        DispatchQueue.concurrentPerform(iterations: slots.count) { i in
            larder_set_loop_slot(slots[i])
            for n in 0..<10_000 { counters.add(n % 3, 2) }
            larder_set_loop_slot(0)
        }
        // 10,000 adds per thread spread over 3 counters: 3,334 + 3,333 + 3,333, each of 2.
        #expect(counters[0] == slots.count * 3_334 * 2)
        #expect(counters[1] == slots.count * 3_333 * 2)
        #expect(counters[2] == slots.count * 3_333 * 2)
    }
}
