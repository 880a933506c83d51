import Foundation
import Synchronization
import Testing
import TestSupport
@testable import Larder
@testable import Settings
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
                try await limit.run(waitingAtMost: .seconds(30)) { await gate.wait() }
                done.add()
            })
        }
        #expect(await eventually { limit.inFlight == 2 && limit.queued == 3 })
        await #expect(throws: ConcurrencyLimit.Full.self) { try await limit.run(waitingAtMost: .seconds(30)) { } }
        gate.open()
        for task in tasks { try await task.value }
        #expect(done.value == 5)
        #expect(limit.inFlight == 0 && limit.queued == 0)
    }

    /// A limit of one slot, held by a task until `gate` opens.
    static func oneSlotHeld() async throws -> (ConcurrencyLimit, Gate, Task<Void, any Error>) {
        let limit = ConcurrencyLimit(limit: 1, queueLimit: 3)
        let gate = Gate(open: false)
        let holder = Task { [limit, gate] in try await limit.run(waitingAtMost: .seconds(30)) { await gate.wait() } }
        #expect(await eventually { limit.inFlight == 1 })
        return (limit, gate, holder)
    }

    /// A waiter gives up when its time is up, and leaves the queue: it waits no longer than
    /// it was given (the upstream timeout), whatever is ahead of it.
    @Test func aWaiterGivesUpWhenItsTimeIsUp() async throws {
        let (limit, gate, holder) = try await Self.oneSlotHeld()
        let began = ContinuousClock.now
        await #expect(throws: ConcurrencyLimit.WaitedTooLong.self) {
            try await limit.run(waitingAtMost: .milliseconds(200)) { }
        }
        let waited = ContinuousClock.now - began
        #expect(waited >= .milliseconds(200) && waited < .seconds(5))
        #expect(limit.queued == 0)
        gate.open()
        try await holder.value
        try await limit.run(waitingAtMost: .seconds(1)) { #expect(limit.inFlight == 1) }
        #expect(limit.inFlight == 0)
    }

    /// Waiters are expired by one task per limit, woken at the earliest deadline: a waiter
    /// that comes later with less patience still leaves on time, and the earlier one on its own.
    @Test func aLaterWaiterWithLessPatienceStillLeavesOnTime() async throws {
        let (limit, gate, holder) = try await Self.oneSlotHeld()
        let began = ContinuousClock.now
        let patient = Task { [limit] in
            do { try await limit.run(waitingAtMost: .seconds(8)) { }; return false }
            catch { return error is ConcurrencyLimit.WaitedTooLong }
        }
        #expect(await eventually { limit.queued == 1 })
        await #expect(throws: ConcurrencyLimit.WaitedTooLong.self) {
            try await limit.run(waitingAtMost: .milliseconds(200)) { }
        }
        // Well before the first waiter's 8 s, with room for a busy test process.
        #expect(ContinuousClock.now - began < .seconds(6))
        #expect(limit.queued == 1)
        #expect(await patient.value)
        #expect(ContinuousClock.now - began >= .seconds(8))
        #expect(limit.queued == 0)
        gate.open()
        try await holder.value
        #expect(limit.inFlight == 0)
    }

    /// Through a real Larder, one slot, a 4 s timeout and an upstream that takes 16 s: of two
    /// requests queued behind a slow one, the first to get the slot (when the slow one times
    /// out) has its whole timeout (the upstream's own 504); the other finds no slot within its
    /// timeout and is answered then (4 s), not sent: 503, Larder's saturation.
    @Test func aRequestQueuedBehindSlowOnesAnswersWithinItsTimeout() async throws {
        // Both must be sent while the slow one holds the slot. A loaded run can start their
        // tasks seconds late; such a run shows nothing about the queue and is made again.
        for _ in 0..<3 {
            guard let (queued, slow, asked) = try await Self.queueBehindASlowRequest() else { continue }
            let refused = queued.filter { $0.0.status == 503 }
            #expect(refused.count == 1, "\(queued.map(\.0.status))")
            #expect(refused.first?.0.header("cache-status") == "larder; fwd=miss; detail=saturated")
            // At its own timeout (4 s), not when the slot next comes free (8 s after the slow one).
            #expect(refused.allSatisfy { $0.1 < .milliseconds(5400) })
            #expect(queued.filter { $0.0.status == 504 }.count == 1)
            #expect(slow == 504)
            #expect(asked == 2)
            return
        }
        Issue.record("in three tries, two requests could not be sent while a slow one held the only slot")
    }

    /// The answers to two requests sent 2 s after a slow one took the only slot, each with the
    /// time from its sending; the slow one's status; the upstream's count. Nil when either
    /// was sent too late to find the slot still held.
    static func queueBehindASlowRequest() async throws -> ([(TestResponse, Duration)], Int, Int)? {
        let upstream = try TestUpstream()
        upstream.update { $0.delay = .seconds(16) }
        var outcome: ([(TestResponse, Duration)], Int, Int)?
        try await withLarder(upstream: upstream, { settings in
            settings.upstreamConcurrency = 1
            settings.upstreamTimeout = .seconds(4)
        }) { (h: ServiceHarness) async throws in
            let slow = Task { try await h.get("/weather?lat=1&lon=1").status }
            guard await eventually({ upstream.count("/v1/forecast") == 1 }) else { return }
            let slotFrees = ContinuousClock.now + .seconds(4)
            try await Task.sleep(for: .seconds(2))
            let queued = try await withThrowingTaskGroup(of: (TestResponse, Duration, ContinuousClock.Instant).self) { group in
                for i in 2...3 {
                    group.addTask {
                        let sent = ContinuousClock.now
                        return (try await h.get("/weather?lat=\(i)&lon=\(i)"), ContinuousClock.now - sent, sent)
                    }
                }
                var queued: [(TestResponse, Duration, ContinuousClock.Instant)] = []
                for try await answer in group { queued.append(answer) }
                return queued
            }
            let status = try await slow.value
            // A second's room for a sent request to reach Larder's queue.
            guard queued.allSatisfy({ $0.2 < slotFrees - .seconds(1) }) else { return }
            outcome = (queued.map { ($0.0, $0.1) }, status, upstream.count("/v1/forecast"))
        }
        await upstream.stop()
        return outcome
    }

    /// Time spent in Larder's own queue is Larder's, not the origin's. Five slots over an
    /// origin that answers each request in 3 s, well within a 5 s timeout: of a burst of
    /// 20 distinct misses, the second five reach the origin after 3 s in the queue and
    /// still get their whole timeout; the ten that find no slot in time are 503 with
    /// `Retry-After` (saturated, not sent). The origin was never slow: nothing is counted
    /// against it, it is not paused, and the next new key reaches it.
    @Test func waitingInLardersQueueIsNotCountedAgainstTheOrigin() async throws {
        let origin = try TestUpstream()
        // Seconds apart (a 2 s margin each way), so a loaded run keeps every step in its place.
        origin.update { $0.delay = .seconds(3) }
        try await withLarder({ settings in
            var route = RouteMount("/o=http://127.0.0.1:\(origin.port)")!
            route.caching.concurrency = 5
            route.caching.timeout = .seconds(5)
            settings.routes = [route]
        }) { h in
            let answers = try await withThrowingTaskGroup(of: TestResponse.self) { group in
                for i in 0..<20 { group.addTask { try await h.get("/o/k\(i)") } }
                var answers: [TestResponse] = []
                for try await answer in group { answers.append(answer) }
                return answers
            }
            let answered = answers.filter { $0.status == 200 }.count
            #expect(answered >= 10, "\(answers.map(\.status))")
            for refused in answers where refused.status != 200 {
                #expect(refused.status == 503)
                #expect(refused.header("retry-after") == "1")
                #expect(refused.header("cache-status") == "larder; fwd=miss; detail=saturated")
            }
            #expect(origin.requests.count == answered)
            let next = try await h.get("/o/fresh")
            #expect(next.status == 200, "\(next.header("cache-status") ?? "-")")
            let metrics = try await h.get("/metrics").text
            #expect(metrics.contains("larder_upstream_requests_total{upstream=\"http://127.0.0.1:\(origin.port)\",outcome=\"timeout\"} 0"))
            #expect(metrics.contains("larder_upstream_requests_total{upstream=\"http://127.0.0.1:\(origin.port)\",outcome=\"ok\"} \(answered + 1)"))
            #expect(metrics.contains("larder_upstream_saturated_total{upstream=\"http://127.0.0.1:\(origin.port)\"} \(20 - answered)"))
        }
        await origin.stop()
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
