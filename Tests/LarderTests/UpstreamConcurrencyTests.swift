import Foundation
import Synchronization
import Testing
import TestSupport
@testable import Larder

/// `--upstream-concurrency`: requests in flight to one upstream are capped, the rest wait
/// in a bounded queue, and beyond it they are refused without reaching the upstream.
@Suite(.timeLimit(.minutes(1))) struct UpstreamConcurrencyTests {
    /// Holds every piece of work until the test opens it.
    final class Gate: Sendable {
        private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
        func wait() async {
            await withCheckedContinuation { continuation in
                let open = state.withLock { state in
                    if !state.open { state.waiters.append(continuation) }
                    return state.open
                }
                if open { continuation.resume() }
            }
        }
        func open() {
            let waiters = state.withLock { state in
                state.open = true
                defer { state.waiters = [] }
                return state.waiters
            }
            waiters.forEach { $0.resume() }
        }
    }

    final class Counter: Sendable {
        private let count = Mutex(0)
        func add() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    @Test func theCapHoldsTheQueueWaitsAndTheRestAreRefused() async throws {
        let limit = ConcurrencyLimit(limit: 2, queueLimit: 3)
        let gate = Gate()
        let done = Counter()
        var tasks: [Task<Void, any Error>] = []
        for _ in 0..<5 {
            tasks.append(Task { [limit, gate, done] in
                try await limit.run { await gate.wait() }
                done.add()
            })
        }
        #expect(await eventually { limit.inFlight == 2 && limit.queued == 3 })
        await #expect(throws: ConcurrencyLimit.Full.self) { try await limit.run { } }
        gate.open()
        for task in tasks { try await task.value }
        #expect(done.value == 5)
        #expect(limit.inFlight == 0 && limit.queued == 0)
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
