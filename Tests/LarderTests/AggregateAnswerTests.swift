import Foundation
import HTTPCore
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// What an aggregate says of itself when a part is large or missing: one limit for a part's
/// answer from the origin or from a cache, and a `Cache-Status` that speaks for the whole.
@Suite(.timeLimit(.minutes(1))) struct AggregateAnswerTests {
    static let tooLarge = "The rates part cannot be used: its answer is 1 MiB or more, and a part's answer is read as JSON only under 1 MiB."

    /// 2 MiB streams through a spool file on a miss; once stored it is held in memory. Both
    /// are refused alike, and the problem names the limit.
    @Test func aPartOverTheLimitFailsAlikeOnAMissAndOnAHit() async throws {
        let big = #"{"base":"EUR","pad":""# + String(repeating: "x", count: 2 << 20) + #""}"#
        let origin = try AggregateTests.origin(big)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("larder-aggregate-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await withLarder(cacheDirectory: directory, { AggregateTests.dashboard(&$0, origin: origin.url) }) { h async throws in
            let miss = try await h.get(AggregateTests.target)
            #expect(miss.status == 502)
            #expect(try json(miss)["detail"] as? String == Self.tooLarge, "\(miss.text)")
            await h.service.waitForDiskWrites()
            var hit = try await h.get(AggregateTests.target)
            for _ in 0..<50 where hit.header("larder-parts")?.contains(#"rates="larder; hit"#) != true {
                try await Task.sleep(for: .milliseconds(100))
                hit = try await h.get(AggregateTests.target)
            }
            #expect(hit.header("larder-parts")?.contains(#"rates="larder; hit"#) == true, "\(hit.header("larder-parts") ?? "")")
            #expect(hit.status == 502)
            #expect(try json(hit)["detail"] as? String == Self.tooLarge, "\(hit.text)")
            #expect(origin.requests.count == 1)
        }
        await origin.stop()
    }

    /// An answer missing a part is not kept: its `Cache-Status` never says `stored`, and the
    /// missing part's 500 is no `fwd-status` of the whole (it is in `Larder-Parts`).
    @Test func aWholeMissingAPartIsNotCalledStored() async throws {
        let origin = try AggregateTests.origin("{}", cacheControl: "no-store", status: 500)
        try await withLarder({ settings in
            settings.routes = [RouteMount("/rates=\(origin.url)")!]
            var rates = AggregateDeclaration.Part(name: "rates", target: PartTarget("/rates/latest?base={currency}")!)
            rates.required = false
            var dash = AggregateDeclaration(path: "/dash", parts: [rates, .init(name: "weather", target: PartTarget("/weather?lat={lat}&lon={lon}")!)])
            dash.deadline = .seconds(30)
            settings.aggregates = [dash]
        }) { h async throws in
            let partial = try await h.get(AggregateTests.target)
            let status = partial.header("cache-status") ?? ""
            #expect(partial.status == 200 && partial.header("cache-control") == "no-store", "\(partial.text)")
            #expect(partial.header("larder-parts")?.contains(#"weather="larder; fwd=miss; fwd-status=200; stored""#) == true,
                    "\(partial.header("larder-parts") ?? "")")
            #expect(!status.contains("stored") && !status.contains("fwd-status=500"), "\(status)")
            #expect(status.hasPrefix("larder; fwd=miss"), "\(status)")
        }
        await origin.stop()
    }
}
