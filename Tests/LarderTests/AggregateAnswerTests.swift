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
}
