public import Foundation

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
