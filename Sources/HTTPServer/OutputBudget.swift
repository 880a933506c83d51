import Synchronization

/// Output waiting across every connection of a server, against one bound
/// (`maxTotalOutputBytes`). Each connection is bounded on its own too, but clients that never
/// read can each hold their bound: 300 such connections pipelining requests for a 1 KB answer
/// held about 600 MB. Past this bound, a connection that still has output waiting parses
/// (and so reads) no further request until its own output drains.
///
/// Only a connection that ends a pass of its loop with output still waiting changes the
/// count (`EventLoop.account`): an answer sent in the pass that made it touches nothing here.
final class OutputBudget: Sendable {
    let limit: Int
    private let count = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    func add(_ delta: Int) {
        count.add(delta, ordering: .relaxed)
    }

    /// Bytes waiting now.
    var waiting: Int { count.load(ordering: .relaxed) }

    var isSpent: Bool { waiting >= limit }
}
