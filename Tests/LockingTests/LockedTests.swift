import Testing
import Locking
import Synchronization

/// The lock every threaded module shares: what one task writes under it the next one reads,
/// and an error thrown under it leaves the value as the body left it.
@Suite struct LockedTests {
    struct Refused: Error {}

    /// A lock the tasks share (`Locked` is not copyable, so a class holds it).
    final class Counter: Sendable {
        let count = Locked(0)
    }

    @Test func everyIncrementFromConcurrentTasksCountsOnce() async {
        let counter = Counter()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask { for _ in 0..<1_000 { counter.count.withLock { $0 += 1 } } }
            }
        }
        #expect(counter.count.withLock { $0 } == 8_000)
    }

    @Test func aThrowingBodyPassesItsErrorOnAndKeepsWhatItWrote() {
        let value = Locked([1])
        #expect(throws: Refused.self) {
            try value.withLock { (list: inout [Int]) throws(Refused) in
                list.append(2)
                throw Refused()
            }
        }
        #expect(value.withLock { $0 } == [1, 2])
    }
}
