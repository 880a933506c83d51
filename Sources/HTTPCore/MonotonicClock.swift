#if canImport(Glibc)
import Glibc
#endif

/// Monotonic time as whole nanoseconds: deadlines, turn stamps and request durations are
/// integer arithmetic on it, where `ContinuousClock`'s `Duration` costs 128-bit arithmetic
/// on every request.
public enum MonotonicClock {
    public static func nanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }
}
