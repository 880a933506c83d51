import Foundation
import HTTPCore
import HTTPServer
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// Over a real socket: an answer that no tier keeps (too large for memory, and asked less
/// than what it would push off the disk) is still answered whole, says why it was not
/// stored, and is counted per tier; what the disk held stays.
@Suite(.timeLimit(.minutes(2)))
struct AdmissionEndToEndTests {
    static let big = patternBytes(100 << 10)

    /// The scrape's value of `series`, once the index has caught up with the writer: read
    /// until `ready` says so (bounded: 200 tries, 100 ms apart).
    private static func scrape(_ larder: ServiceHarness, until ready: (String) -> Bool) async throws -> String {
        var metrics = ""
        for _ in 0..<200 {
            metrics = try await larder.get("/metrics").text
            if ready(metrics) { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        return metrics
    }

    @Test func anAnswerNoTierAdmitsIsAnsweredAndSaysNotAdmitted() async throws {
        let origin = try TestOrigin { request in
            HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=600")]),
                         body: request.path.hasSuffix("/big") ? Self.big : Array("small".utf8))
        }
        try await withLarder({
            $0.routes = [RouteMount("/b=\(origin.url)")!]
            $0.memoryLimit = 64 << 10  // the big answer is larger than the whole memory tier
            $0.diskLimit = 256 << 10  // 64 blocks, filled by 64 small answers
        }) { larder in
            for n in 0..<64 {
                let small = try await larder.get("/b/small-\(n)")
                #expect(small.status == 200 && small.header("Cache-Status")?.contains("stored") == true)
            }
            let entries = "larder_cache_entries{tier=\"disk\"}"
            let full = try await Self.scrape(larder) { metricValue(entries, in: $0) == 64 }
            #expect(metricValue(entries, in: full) == 64, "the writer indexed every small answer")

            for _ in 0..<2 {
                let first = try await larder.get("/b/big")
                #expect(first.status == 200 && sameBytes(first.body, Self.big))
                let status = first.header("Cache-Status") ?? ""
                #expect(status.contains("fwd=miss") && status.contains("detail=not-admitted") && !status.contains("stored"), "\(status)")
            }
            #expect(origin.requests.filter { $0.path.hasSuffix("/big") }.count == 2, "not stored, so fetched again")
            let rejections = "larder_cache_admission_rejections_total{tier=\"disk\"}"
            let metrics = try await Self.scrape(larder) { metricValue(rejections, in: $0) >= 2 }
            #expect(metricValue(rejections, in: metrics) == 2)
            #expect(metricValue(entries, in: metrics) == 64, "what the disk held stays")
        }
        await origin.stop()
    }
}
