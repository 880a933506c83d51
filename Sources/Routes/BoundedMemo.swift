import Locking
import Synchronization

/// What an aggregate keeps from one request to the next so as not to make it again (a part's
/// shaped JSON, a body and its ETag, the parts' cache requests): values by key, bounded by
/// what they cost. When the next would pass `budget` it starts again; a value costing more
/// than an eighth of the budget is never kept.
final class BoundedMemo<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let budget: Int
    private let kept = Locked<(values: [Key: Value], cost: Int)>(([:], 0))

    init(budget: Int) { self.budget = budget }

    subscript(key: Key) -> Value? { kept.withLock { $0.values[key] } }

    func keep(_ value: Value, for key: Key, cost: Int) {
        guard cost <= budget / 8 else { return }
        kept.withLock { kept in
            if kept.cost + cost > budget { kept = ([:], 0) }
            kept.values[key] = value
            kept.cost += cost
        }
    }
}
