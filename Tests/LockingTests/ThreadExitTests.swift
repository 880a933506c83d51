import Foundation
import Locking
import Testing

/// A stop's wait for a thread: it returns when the thread has ended, at once when it had, and
/// at its limit when the thread is stuck.
@Suite struct ThreadExitTests {
    @Test func aWaitReturnsWhenTheThreadEndsOrAtItsLimit() async {
        let ended = ThreadExit()
        let go = DispatchSemaphore(value: 0)
        Thread {
            go.wait()
            ended.exited()
        }.start()
        async let waited = ended.wait(atMost: .seconds(10))
        try? await Task.sleep(for: .milliseconds(50))
        #expect(!ended.hasExited)
        go.signal()
        #expect(await waited, "it ended")
        #expect(await ended.wait(atMost: .zero), "already ended: at once")

        let stuck = ThreadExit()
        let started = ContinuousClock.now
        #expect(await stuck.wait(atMost: .milliseconds(200)) == false)
        #expect(started.duration(to: .now) >= .milliseconds(200))
        stuck.exited()
    }
}
