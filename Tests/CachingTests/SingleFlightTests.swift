import Synchronization
import Testing
@testable import Caching

/// One flight per key: its first caller runs the work, in its own task; callers that come
/// while it runs share its outcome; one that comes after it ended starts the next.
@Suite(.timeLimit(.minutes(1))) struct SingleFlightTests {
    @Test func theFirstCallerRunsTheWorkInItsOwnTask() async {
        let flights = SingleFlight<Int>()
        let caller = withUnsafeCurrentTask { $0 }
        var runner: UnsafeCurrentTask?
        let (outcome, collapsed) = await flights.run("k") {
            runner = withUnsafeCurrentTask { $0 }
            return 7
        }
        #expect(outcome == 7 && !collapsed)
        #expect(caller != nil && runner == caller)
        #expect(flights.inFlight == 0)
    }

    private final class Runs: Sendable {
        private let count = Atomic(0)
        func add() { count.add(1, ordering: .relaxed) }
        var value: Int { count.load(ordering: .relaxed) }
    }

    @Test func callersWhileAFlightRunsShareItsOutcome() async {
        let flights = SingleFlight<Int>()
        let runs = Runs()
        let (gate, opener) = AsyncStream<Void>.makeStream()
        let results = await withTaskGroup(of: (Int, Bool).self) { group in
            group.addTask {
                let (outcome, collapsed) = await flights.run("k") {
                    runs.add()
                    for await _ in gate { break }
                    return 42
                }
                return (outcome, collapsed)
            }
            while runs.value == 0 { await Task.yield() }
            for _ in 0..<5 {
                group.addTask {
                    let (outcome, collapsed) = await flights.run("k") {
                        runs.add()
                        return 0
                    }
                    return (outcome, collapsed)
                }
            }
            // The joiners are queued behind the flight before it may end.
            while flights.waiting("k") < 5 { await Task.yield() }
            opener.yield()
            return await group.reduce(into: [(Int, Bool)]()) { $0.append($1) }
        }
        #expect(runs.value == 1)
        #expect(results.count == 6 && results.allSatisfy { $0.0 == 42 })
        #expect(results.filter { !$0.1 }.count == 1)
    }

    @Test func aCallerAfterAFlightEndedLeadsTheNext() async {
        let flights = SingleFlight<Int>()
        let first = await flights.run("k") { 1 }
        let second = await flights.run("k") { 2 }
        #expect(first == (1, false) && second == (2, false))
    }
}
