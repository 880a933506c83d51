import Foundation
import Synchronization
import Testing
import TestSupport
@testable import Larder
import Locking
@testable import UpstreamPolicy

/// `--upstream-concurrency`: requests in flight to one upstream are capped, the rest wait
/// in a bounded queue, and beyond it they are refused without reaching the upstream.
@Suite(.timeLimit(.minutes(1))) struct UpstreamConcurrencyTests {
    final class Counter: Sendable {
        private let count = Locked(0)
        func add() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    @Test func theCapHoldsTheQueueWaitsAndTheRestAreRefused() async throws {
        let limit = ConcurrencyLimit(limit: 2, queueLimit: 3)
        let gate = Gate(open: false)
        let done = Counter()
        var tasks: [Task<Void, any Error>] = []
        for _ in 0..<5 {
            tasks.append(Task { [limit, gate, done] in
                try await limit.run(waitingAtMost: .seconds(30)) { _ in await gate.wait() }
                done.add()
            })
        }
        #expect(await eventually { limit.inFlight == 2 && limit.queued == 3 })
        await #expect(throws: ConcurrencyLimit.Full.self) { try await limit.run(waitingAtMost: .seconds(30)) { _ in } }
        gate.open()
        for task in tasks { try await task.value }
        #expect(done.value == 5)
        #expect(limit.inFlight == 0 && limit.queued == 0)
    }

    /// A limit of one slot, held by a task until `gate` opens.
    static func oneSlotHeld() async throws -> (ConcurrencyLimit, Gate, Task<Void, any Error>) {
        let limit = ConcurrencyLimit(limit: 1, queueLimit: 3)
        let gate = Gate(open: false)
        let holder = Task { [limit, gate] in try await limit.run(waitingAtMost: .seconds(30)) { _ in await gate.wait() } }
        #expect(await eventually { limit.inFlight == 1 })
        return (limit, gate, holder)
    }

    /// A waiter gives up when its time is up, and leaves the queue: the wait is part of the
    /// upstream timeout (a request once waited 77 s behind a 30 s timeout).
    @Test func aWaiterGivesUpWhenItsTimeIsUp() async throws {
        let (limit, gate, holder) = try await Self.oneSlotHeld()
        let began = ContinuousClock.now
        await #expect(throws: ConcurrencyLimit.WaitedTooLong.self) {
            try await limit.run(waitingAtMost: .milliseconds(200)) { _ in }
        }
        let waited = ContinuousClock.now - began
        #expect(waited >= .milliseconds(200) && waited < .seconds(5))
        #expect(limit.queued == 0)
        gate.open()
        try await holder.value
        let told = try await limit.run(waitingAtMost: .seconds(1)) { waited in waited }
        #expect(told < .seconds(1) && limit.inFlight == 0)
    }

    /// Waiters are expired by one task per limit, woken at the earliest deadline: a waiter
    /// that comes later with less patience still leaves on time, and the earlier one on its own.
    @Test func aLaterWaiterWithLessPatienceStillLeavesOnTime() async throws {
        let (limit, gate, holder) = try await Self.oneSlotHeld()
        let began = ContinuousClock.now
        let patient = Task { [limit] in
            do { try await limit.run(waitingAtMost: .seconds(8)) { _ in }; return false }
            catch { return error is ConcurrencyLimit.WaitedTooLong }
        }
        #expect(await eventually { limit.queued == 1 })
        await #expect(throws: ConcurrencyLimit.WaitedTooLong.self) {
            try await limit.run(waitingAtMost: .milliseconds(200)) { _ in }
        }
        // Well before the first waiter's 8 s, with room for a busy test process.
        #expect(ContinuousClock.now - began < .seconds(6))
        #expect(limit.queued == 1)
        #expect(try await patient.value)
        #expect(ContinuousClock.now - began >= .seconds(8))
        #expect(limit.queued == 0)
        gate.open()
        try await holder.value
        #expect(limit.inFlight == 0)
    }

    /// Through a real Larder: with one slot held by a slow fetch, the next request's answer
    /// comes within its upstream timeout (504), not after the first fetch ends.
    @Test func aRequestQueuedBehindSlowOnesAnswersWithinItsTimeout() async throws {
        let upstream = try TestUpstream()
        upstream.update { $0.delay = .seconds(4) }
        try await withLarder(upstream: upstream, { settings in
            settings.upstreamConcurrency = 1
            settings.upstreamTimeout = .seconds(1)
        }) { (h: ServiceHarness) async throws in
            let slow = Task { try await h.get("/weather?lat=1&lon=1").status }
            #expect(await eventually { upstream.count("/v1/forecast") == 1 })
            let began = ContinuousClock.now
            #expect(try await h.get("/weather?lat=2&lon=2").status == 504)
            #expect(ContinuousClock.now - began < .milliseconds(2500))
            #expect(try await slow.value == 504)
        }
        await upstream.stop()
    }

    @Test func theUpstreamSeesNoMoreThanTheCap() async throws {
        let upstream = try TestUpstream()
        upstream.update { $0.delay = .milliseconds(150) }
        try await withLarder(upstream: upstream, { $0.upstreamConcurrency = 3 }) { h in
            try await withThrowingTaskGroup(of: Int.self) { group in
                for i in 0..<12 { group.addTask { try await h.get("/weather?lat=\(i)&lon=1").status } }
                for try await status in group { #expect(status == 200) }
            }
            #expect(upstream.count("/v1/forecast") == 12)
            #expect(upstream.mostConcurrent == 3)
        }
        await upstream.stop()
    }
}
