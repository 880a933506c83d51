import RedisVocabulary
import Testing

/// `--redis-url` is read once at start; what it accepts and refuses, and that the password
/// never reaches `description`, which is what logs print.
@Suite struct RedisURLTests {
    @Test func everyPartIsRead() throws {
        let url = try #require(RedisURL("redis://app:s%40cret@cache.internal:6380/3"))
        #expect(url.host == "cache.internal")
        #expect(url.port == 6380)
        #expect(url.username == "app")
        #expect(url.password == "s@cret")
        #expect(url.database == 3)
        #expect(url.description == "redis://app:<redacted>@cache.internal:6380/3")
        #expect(!url.description.contains("cret"))
    }

    @Test func defaultsAndIPv6() throws {
        let url = try #require(RedisURL("REDIS://[::1]"))
        #expect(url.host == "::1")
        #expect(url.port == 6379)
        #expect(url.database == 0)
        #expect(url.username == nil && url.password == nil)
        #expect(url.description.contains("[::1]"))
    }

    @Test(arguments: ["http://cache:6379", "redis://", "redis://h:0", "redis://h:70000", "redis://h/x", "redis://h/-1",
                      "redis://h?db=1", "redis://h#f", "cache:6379"])
    func anythingElseIsRefused(_ text: String) {
        #expect(RedisURL(text) == nil)
    }
}
