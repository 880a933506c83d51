@testable import HTTPServer
import Testing

/// The learnt poll window, with idle times given rather than waited for.
@Suite struct IdlePollingTests {
    let limit: UInt64 = 200_000

    @Test func aLoopWokenSoonAfterGoingIdlePollsLongerUpToTheLimit() {
        var polling = IdlePolling(limit: limit)
        #expect(polling.window == 0)
        polling.woke(afterIdling: 30_000)
        #expect(polling.window == 50_000)
        polling.woke(afterIdling: 30_000)
        #expect(polling.window == 100_000)
        polling.woke(afterIdling: limit)
        #expect(polling.window == limit)
        polling.woke(afterIdling: 1_000)
        #expect(polling.window == limit)
    }

    @Test func aLoopWhoseSleepsOutlastTheLimitStopsPolling() {
        var polling = IdlePolling(limit: limit)
        for _ in 0..<3 { polling.woke(afterIdling: 10_000) }
        #expect(polling.window == limit)
        polling.woke(afterIdling: limit + 1)
        #expect(polling.window == 100_000)
        polling.woke(afterIdling: 5_000_000)
        #expect(polling.window == 50_000)
        polling.woke(afterIdling: 5_000_000)
        #expect(polling.window == 25_000, "an eighth of the limit is kept")
        polling.woke(afterIdling: 5_000_000)
        #expect(polling.window == 0, "under an eighth of the limit is dropped")
        polling.woke(afterIdling: 5_000_000)
        #expect(polling.window == 0)
        polling.woke(afterIdling: 10_000)
        #expect(polling.window == 50_000, "one short sleep starts it again, at a quarter")
    }

    @Test func aLimitOfZeroNeverPolls() {
        var polling = IdlePolling(limit: 0)
        for idle: UInt64 in [0, 1, 10_000, 5_000_000] {
            polling.woke(afterIdling: idle)
            #expect(polling.window == 0)
        }
    }
}
