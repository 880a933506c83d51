import Foundation

/// RFC 9111 §4.2: how long a stored answer stays fresh and how old it is now, as pure
/// functions of the entry and a clock reading.
public enum Freshness {
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
