public import Foundation
import HTTPCore

/// RFC 9111 §4.2: how long a stored answer stays fresh and how old it is now, as pure
/// functions of the entry and a clock reading.
public enum Freshness {
    /// Freshness lifetime under a route's policy: explicit, else the route's lifetime for the
    /// status, else heuristic where the policy allows it, else the policy's default.
    public static func lifetime(of entry: CacheEntry, policy: CachePolicy) -> TimeInterval {
        if !policy.defaultLifetimes.isEmpty, !hasExplicitLifetime(entry), let configured = policy.defaultLifetimes[entry.status] {
            return configured
        }
        if policy.heuristicFreshness, !hasExplicitLifetime(entry), let heuristic = heuristicLifetime(of: entry) { return heuristic }
        return lifetime(of: entry, defaultLifetime: policy.defaultLifetime)
    }

    /// Freshness lifetime (§4.2.1): `s-maxage` (a shared cache), else `max-age`, else
    /// `Expires − Date`, else `defaultLifetime` (nil: no lifetime, so the entry is stale at once).
    public static func lifetime(of entry: CacheEntry, defaultLifetime: TimeInterval?) -> TimeInterval {
        if let shared = entry.cacheControl.sharedMaxAge { return TimeInterval(shared) }
        if let maxAge = entry.cacheControl.maxAge { return TimeInterval(maxAge) }
        if let expires = entry.expires {
            // Without a Date, the time the answer arrived stands in for it (RFC 9110 §6.6.1).
            return max(0, expires.timeIntervalSince(entry.date ?? entry.responseTime))
        }
        return defaultLifetime ?? 0
    }

    /// Whether the origin stated a lifetime (`s-maxage`, `max-age` or `Expires`).
    public static func hasExplicitLifetime(_ entry: CacheEntry) -> Bool {
        entry.cacheControl.sharedMaxAge != nil || entry.cacheControl.maxAge != nil || entry.expires != nil
    }

    /// Statuses a cache may give a heuristic lifetime (RFC 9110 §15.1).
    public static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]

    /// The longest heuristic lifetime given, however old the resource.
    public static let heuristicCeiling: TimeInterval = 86_400

    /// §4.2.2: a tenth of the time since `Last-Modified`, at most a day, for a heuristically
    /// cacheable status (or any status marked `public`); nil when no heuristic applies.
    public static func heuristicLifetime(of entry: CacheEntry) -> TimeInterval? {
        guard heuristicallyCacheable.contains(entry.status) || entry.cacheControl.isPublic,
              let modified = entry.lastModified.flatMap(HTTPDateParser.parse) else { return nil }
        let since = (entry.date ?? entry.responseTime).timeIntervalSince(modified)
        return since > 0 ? min(since / 10, heuristicCeiling) : nil
    }

    /// `current_age` (§4.2.3):
    ///
    ///     apparent_age          = max(0, response_time - date_value)
    ///     response_delay        = response_time - request_time
    ///     corrected_age_value   = age_value + response_delay
    ///     corrected_initial_age = max(apparent_age, corrected_age_value)
    ///     resident_time         = now - response_time
    ///     current_age           = corrected_initial_age + resident_time
    public static func currentAge(of entry: CacheEntry, now: Date) -> TimeInterval {
        let apparentAge = max(0, entry.responseTime.timeIntervalSince(entry.date ?? entry.responseTime))
        let responseDelay = max(0, entry.responseTime.timeIntervalSince(entry.requestTime))
        let correctedAgeValue = TimeInterval(entry.ageValue) + responseDelay
        let correctedInitialAge = max(apparentAge, correctedAgeValue)
        let residentTime = max(0, now.timeIntervalSince(entry.responseTime))
        return correctedInitialAge + residentTime
    }

    /// A lifetime as `max-age` states it: whole seconds, at most 2147483648 (RFC 9111 §1.2.2).
    public static func wholeSeconds(_ lifetime: TimeInterval) -> Int {
        Int(min(max(0, lifetime), TimeInterval(CacheControl.deltaSecondsCeiling)))
    }

    /// `Age` as sent: whole seconds, rounded down (RFC 9111 §5.1).
    public static func ageHeader(_ age: TimeInterval) -> Int {
        Int(min(max(0, age), TimeInterval(CacheControl.deltaSecondsCeiling)).rounded(.down))
    }
}
