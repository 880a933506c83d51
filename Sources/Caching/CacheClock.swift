import Foundation
import Synchronization
import Locking

/// Where the cache reads the time, so freshness and Age are tested with a clock the test
/// moves, never by sleeping.
public protocol CacheClock: Sendable {
    func now() -> Date
}

/// The system's wall clock (RFC 9111's Age arithmetic compares it with upstream `Date`s).
public struct SystemClock: CacheClock {
    public init() {}
    public func now() -> Date { Date() }
}

/// A clock that only moves when told: for tests.
public final class ManualClock: CacheClock {
    private let current: Locked<Date>

    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        current = Locked(start)
    }

    public func now() -> Date { current.withLock { $0 } }

    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}
