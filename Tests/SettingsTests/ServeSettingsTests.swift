import HTTPCore
import Logging
import Foundation
import HTTPServer
import Testing
import RedisVocabulary
@testable import Settings

@Suite(.timeLimit(.minutes(1))) struct ServeSettingsTests {
    @Test func defaultsApplyWhenNothingIsGiven() throws {
        let settings = try ServeSettings.resolve(flags: [:], environment: [:])
        #expect(settings.host == "127.0.0.1")
        #expect(settings.port == 8080)
        #expect(settings.logFormat == .text)
    }

    @Test func environmentOverridesDefaultsAndFlagsOverrideEnvironment() throws {
        let environment = ["LARDER_HOST": "0.0.0.0", "LARDER_PORT": "9000", "LARDER_LOG_FORMAT": "json"]
        let fromEnvironment = try ServeSettings.resolve(flags: [:], environment: environment)
        #expect(fromEnvironment.host == "0.0.0.0")
        #expect(fromEnvironment.port == 9000)
        #expect(fromEnvironment.logFormat == .json)
        let fromFlags = try ServeSettings.resolve(flags: ["port": "9100"], environment: environment)
        #expect(fromFlags.port == 9100)
        #expect(fromFlags.host == "0.0.0.0")
    }

    @Test(arguments: [["port": "65536"], ["port": "-1"], ["port": "http"], ["host": ""], ["log.format": "xml"], ["log.level": "loud"],
                      ["ca.file": "/nonexistent/ca.pem"], ["ca.file": "/tmp"], ["upstream.backoff": "0"], ["upstream.backoff": "61s"],
                      ["upstream.backoff": "soon"], ["redis.url": "http://redis:6379"], ["redis.url": "redis://"],
                      ["redis.url": "redis://h:70000"], ["redis.url": "redis://h/x"], ["redis.timeout": "0"], ["redis.timeout": "11s"],
                      ["redis.prefix": ""], ["redis.prefix": "has space"],
                      ["event.loops": "0"], ["event.loops": "257"], ["event.loops": "two"],
                      ["max.request.body": "0"], ["max.request.body": "2GiB"], ["max.request.body": "big"],
                      ["max.object.size": "1023"], ["max.object.size": "2GiB"]])
    func badValuesAreRejectedWithTheirName(_ flags: [String: String]) {
        #expect {
            try ServeSettings.resolve(flags: flags, environment: [:])
        } throws: { error in
            let message = (error as? ConfigurationError)?.message ?? ""
            return message.contains("--" + flags.keys.first!.replacingOccurrences(of: ".", with: "-"))
        }
    }

    @Test func redisIsOffUntilAURLIsGivenAndItsPasswordIsNeverShown() throws {
        let off = try ServeSettings.resolve(flags: [:], environment: [:])
        #expect(off.redisURL == nil)
        #expect(off.summary["redis"] == "off")
        let on = try ServeSettings.resolve(flags: ["redis.timeout": "250ms"],
                                           environment: ["LARDER_REDIS_URL": "redis://:hunter2@cache.internal:6380/3", "LARDER_REDIS_PREFIX": "app1:"])
        let url = try #require(on.redisURL)
        #expect(url.host == "cache.internal")
        #expect(url.port == 6380)
        #expect(url.password == "hunter2")
        #expect(url.database == 3)
        #expect(on.redisTimeout == .milliseconds(250))
        #expect(on.redisPrefix == "app1:")
        let shown = "\(on.summary)"
        #expect(!shown.contains("hunter2"))
        #expect(shown.contains("redis://:<redacted>@cache.internal:6380/3"))
        #expect(RedisURL("redis://[::1]")?.host == "::1")
        #expect(RedisURL("redis://[::1]")?.port == 6379)
        #expect(RedisURL("redis://app:secret@h")?.username == "app")
    }

    /// Open-Meteo's commercial API takes its key in the URL: wherever a URL is printed, a
    /// credential-like parameter's value and a password are not.
    @Test func credentialsInUpstreamURLsAreRedactedWhereverTheyArePrinted() throws {
        let settings = try ServeSettings.resolve(flags: ["routes": "/api=https://svc:pa55@origin.example/base"], environment: [
            "LARDER_WEATHER_URL": "https://customer-api.open-meteo.com/v1/forecast?apikey=S3CRET&models=best",
            "LARDER_BALANCE_URL": "https://u:hunter2@bank.example/balance?Access_Token=T0KEN&x-api-key=K3Y&sig=S1G#frag",
        ])
        let shown = "\(settings.summary)"
        for secret in ["S3CRET", "pa55", "hunter2", "T0KEN", "K3Y", "S1G"] { #expect(!shown.contains(secret), "\(secret)") }
        #expect(settings.summary["weather_url"] == "https://customer-api.open-meteo.com/v1/forecast?apikey=<redacted>&models=best")
        #expect(settings.summary["balance_url"]
            == "https://u:<redacted>@bank.example/balance?Access_Token=<redacted>&x-api-key=<redacted>&sig=<redacted>#frag")
        #expect(settings.summary["routes"] == "/api=https://svc:<redacted>@origin.example/base")
    }

    @Test(arguments: [("http://h/p?key=1&monkey=2&q=3", "http://h/p?key=<redacted>&monkey=2&q=3"),
                      ("http://h/p?client_secret=1&auth_token=2&password", "http://h/p?client_secret=<redacted>&auth_token=<redacted>&password"),
                      ("http://h/p?ap%69key=1", "http://h/p?ap%69key=<redacted>"), ("http://h:8/p", "http://h:8/p"),
                      ("http://user@h/p?signature=", "http://user@h/p?signature=<redacted>")])
    func urlsAreRedactedByParameterName(_ url: String, _ shown: String) {
        #expect(RedactedURL.text(url) == shown)
    }

    @Test(arguments: [("/weather=http://o", "/weather is a built-in path"), ("/metrics=http://o", "/metrics is a built-in path"),
                      ("/a=http://o,/b=http://o,/a=http://p", "the prefix /a is given twice"),
                      ("/x/../y=http://o", "write the prefix as /y"), ("/%41pi=http://o", "write the prefix as /Api")])
    func routesThatCanNeverMatchAreRefused(_ routes: String, _ reason: String) {
        #expect {
            try ServeSettings.resolve(flags: ["routes": routes], environment: [:])
        } throws: { error in
            let message = (error as? ConfigurationError)?.message ?? ""
            return message.hasPrefix("--route (LARDER_ROUTES) ") && message.contains(reason)
        }
    }

    @Test func routesUnderABuiltInPathOrNestedInEachOtherAreKept() throws {
        let settings = try ServeSettings.resolve(flags: ["routes": "/=http://o,/metrics/extra=http://o,/api=http://o,/api/v2=http://p"], environment: [:])
        #expect(settings.routes.count == 4)
    }

    @Test func theUpstreamBackoffComesFromItsFlagOrEnvironment() throws {
        #expect(try ServeSettings.resolve(flags: [:], environment: [:]).upstreamBackoff == .seconds(5))
        #expect(try ServeSettings.resolve(flags: [:], environment: ["LARDER_UPSTREAM_BACKOFF": "2s"]).upstreamBackoff == .seconds(2))
        #expect(try ServeSettings.resolve(flags: ["upstream.backoff": "1500ms"], environment: ["LARDER_UPSTREAM_BACKOFF": "2s"])
            .upstreamBackoff == .milliseconds(1500))
    }

    @Test func eventLoopsAreOnePerCPUUnlessGiven() throws {
        let perCPU = HTTPServerConfiguration(host: "127.0.0.1", port: 0).eventLoops
        let unset = try ServeSettings.resolve(flags: [:], environment: [:])
        #expect(unset.eventLoops == nil)
        #expect(unset.serverConfiguration.eventLoops == perCPU)
        #expect(unset.summary["event_loops"] == .stringConvertible(perCPU))
        let one = try ServeSettings.resolve(flags: [:], environment: ["LARDER_EVENT_LOOPS": "1"])
        #expect(one.serverConfiguration.eventLoops == 1)
        #expect(one.summary["event_loops"] == .stringConvertible(1))
        #expect(try ServeSettings.resolve(flags: ["event.loops": "3"], environment: ["LARDER_EVENT_LOOPS": "1"]).serverConfiguration.eventLoops == 3)
    }

    @Test func durationsTakeMicrosecondsAndMeanSecondsWithoutAUnit() throws {
        #expect(try ServeSettings.resolve(flags: ["redis.timeout": "1500us"], environment: [:]).redisTimeout == .microseconds(1500))
        #expect(try ServeSettings.resolve(flags: ["weather.ttl": "90"], environment: [:]).weatherTTL == .seconds(90))
    }

    @Test func routesComeFromRepeatedFlagsOrTheEnvironmentList() throws {
        let fromEnvironment = try ServeSettings.resolve(flags: [:], environment: ["LARDER_ROUTES": "/=http://a:1/, /api=https://b.example/base"])
        #expect(fromEnvironment.routes.map(\.description) == ["/=http://a:1", "/api=https://b.example/base"])
        // The --route flags arrive joined with commas, and win over the environment.
        let fromFlags = try ServeSettings.resolve(flags: ["routes": "/x=http://c:2"], environment: ["LARDER_ROUTES": "/=http://a:1"])
        #expect(fromFlags.routes == [RouteMount("/x=http://c:2")!])
        #expect(try ServeSettings.resolve(flags: [:], environment: [:]).routes.isEmpty)
    }

    @Test(arguments: ["api=http://a:1", "/=ftp://a", "/=", "=http://a:1", "/a b=http://a:1", "/=http://a:1?q=1", "/=http://"])
    func badRoutesAreRejectedNamingTheFlag(_ route: String) {
        #expect {
            try ServeSettings.resolve(flags: ["routes": route], environment: [:])
        } throws: { error in
            let message = (error as? ConfigurationError)?.message ?? ""
            return message.contains("--route (LARDER_ROUTES)") && message.contains(route)
        }
    }

    @Test func aRouteCoversItsPrefixOnPathSegmentBoundaries() {
        let api = RouteMount("/api=http://o:1")!
        #expect(api.covers("/api") && api.covers("/api/") && api.covers("/api/v1/items"))
        #expect(!api.covers("/apix") && !api.covers("/ap") && !api.covers("/"))
        let root = RouteMount("/=http://o:1")!
        #expect(root.covers("/") && root.covers("/anything"))
        // By bytes: a combining mark after the boundary's slash does not hide it (by
        // Characters, "/" and the mark were one Character, not "/").
        #expect(api.covers("/api/\u{301}x") && RouteMount("/api/=http://o:1")!.covers("/api/\u{301}"))
        #expect(!api.covers("/api\u{301}"))
    }

    @Test func upstreamHeadersComeFromRepeatedFlagsOrTheEnvironmentAndFiles() throws {
        let secret = FileManager.default.temporaryDirectory.appendingPathComponent("larder-secret-\(UUID().uuidString)").path
        try "Bearer s3cret-from-file\n".write(toFile: secret, atomically: true, encoding: .utf8)
        let settings = try ServeSettings.resolve(
            flags: ["balance.headers": "Authorization: @\(secret)\nX-Api-Key:  k1 "],
            environment: ["LARDER_WEATHER_HEADERS": "X-Team: weather\nX-Other: two"])
        #expect(settings.balanceHeaders["authorization"] == "Bearer s3cret-from-file")
        #expect(settings.balanceHeaders["x-api-key"] == "k1")
        #expect(settings.weatherHeaders.map(\.name) == ["X-Team", "X-Other"])
        #expect(CredentialHeaders.redacted(settings.balanceHeaders) == "Authorization: <redacted>, X-Api-Key: <redacted>")
    }

    @Test(arguments: ["NoColon s3cret-value", "Bad Name: s3cret-value", "Authorization: @/nonexistent/s3cret-value", "X-Empty:"])
    func badUpstreamHeadersAreRejectedWithoutTheirValue(_ item: String) {
        #expect {
            try ServeSettings.resolve(flags: ["weather.headers": item], environment: [:])
        } throws: { error in
            let message = (error as? ConfigurationError)?.message ?? ""
            return message.contains("--weather-header (LARDER_WEATHER_HEADERS)") && !message.contains("s3cret-value")
                || message.contains("/nonexistent/")  // a path is not a secret; the value in the file would be
        }
    }
}
