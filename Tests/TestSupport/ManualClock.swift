import Synchronization
public import Foundation
public import Caching
import Locking

/// A cache clock that only moves when a test moves it, so freshness and Age are tested
/// without sleeping. It lives here, beside the tests, because nothing in production moves time.
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
