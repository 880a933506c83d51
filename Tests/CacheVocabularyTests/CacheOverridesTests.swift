import CacheVocabulary
import HTTPCore
import Testing

@Suite struct CacheOverridesTests {
    @Test func overridesTakeOnlyWhatTheyName() {
        let headers = HTTPHeaders([("Cache-Control", "Private=\"X-A\", max-age=5"), ("Cache-Control", "no-cache"), ("Set-Cookie", "a=1")])
        let privateOnly = CacheOverrides.private.applied(to: headers)
        #expect(privateOnly.values("cache-control") == ["Private=\"X-A\", max-age=5", "no-cache"])
        #expect(CacheOverrides.noCache.applied(to: headers).values("cache-control") == ["Private=\"X-A\", max-age=5"])
        #expect(privateOnly["set-cookie"] == "a=1" && privateOnly["larder-override"] == "private")
        #expect(CacheOverrides([]).applied(to: headers) == headers)
        #expect(CacheOverrides.setCookie.applied(to: HTTPHeaders([("Cache-Control", "max-age=5")])) == HTTPHeaders([("Cache-Control", "max-age=5")]))
    }
}
