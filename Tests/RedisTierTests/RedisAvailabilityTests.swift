import Testing
@testable import RedisTier

/// Redis going away and coming back is one log line each, whatever the number of requests
/// that meet it meanwhile.
@Suite struct RedisAvailabilityTests {
    @Test func aFirstConnectionALossAndAReturnAreOneChangeEach() {
        var availability = RedisAvailability()
        #expect(availability.observe(RedisAvailability.connecting) == nil)
        #expect(availability.observe(nil) == .connected)
        #expect(availability.observe(nil) == nil)
        #expect(availability.observe("connection refused") == .lost("connection refused"))
        #expect(availability.observe("connection refused") == nil)
        #expect(availability.observe("timed out") == nil)
        #expect(availability.observe(nil) == .back)
        #expect(availability.observe(nil) == nil)
    }

    @Test func aRedisNeverReachedIsALossOnceItsFirstAttemptFails() {
        var availability = RedisAvailability()
        #expect(availability.observe(RedisAvailability.connecting) == nil)
        #expect(availability.observe("cannot resolve redis") == .lost("cannot resolve redis"))
        #expect(availability.observe(RedisAvailability.connecting) == nil)
        #expect(availability.observe(nil) == .back)
    }
}
