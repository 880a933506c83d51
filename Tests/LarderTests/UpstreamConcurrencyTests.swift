import Foundation
import Synchronization
import Testing
import TestSupport
@testable import Larder

/// `--upstream-concurrency`: requests in flight to one upstream are capped, the rest wait
/// in a bounded queue, and beyond it they are refused without reaching the upstream.
@Suite(.timeLimit(.minutes(1))) struct UpstreamConcurrencyTests {
    final class Counter: Sendable {
        private let count = Mutex(0)
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
