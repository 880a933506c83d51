import Foundation
import CacheVocabulary
import HTTPCore
import Synchronization
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// A newer answer that no tier keeps still supersedes the older ones stored for its key: once
/// it was given to a client, the older is not served again (RFC 9111 §4: a cache uses the most
/// recent response it has stored).
@Suite(.timeLimit(.minutes(1))) struct SupersededAnswerTests {
    /// An open-ended (chunked) answer over the route's largest object: known too large only at
    /// its end, when the stream is not stored. The stored `v1` goes from memory and disk.
    @Test func aChunkedAnswerTooLargeToStoreTakesTheOlderWithIt() async throws {
        let asked = Atomic<Int>(0)
        let origin = try RawServer { fd, _ in
            _ = RawServer.readHead(fd)
            guard asked.add(1, ordering: .relaxed).oldValue > 0 else {
                return RawServer.send(fd, "HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\nContent-Length: 2\r\nConnection: close\r\n\r\nv1")
            }
            RawServer.send(fd, "HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
            let chunk = "10000\r\n" + String(repeating: "n", count: 1 << 16) + "\r\n"
            for _ in 0..<48 { RawServer.send(fd, chunk) }  // 3 MiB
            RawServer.send(fd, "0\r\n\r\n")
        }
        defer { origin.stop() }
        var mount = RouteMount("/r=http://127.0.0.1:\(origin.port)")!
        mount.caching.clientRefresh = .honour
        mount.caching.maxObjectSize = 2 << 20
        try await withLarder({ $0.routes = [mount] }) { h in
            #expect(try await h.get("/r/x").text == "v1")
            await h.service.waitForDiskWrites()
            #expect(try await h.get("/r/x").header("Cache-Status")?.hasPrefix("larder; hit") == true)
            let newer = try await h.get("/r/x", headers: ["Cache-Control: no-cache"])
            #expect(newer.status == 200 && newer.body.count == 3 << 20)
            #expect(newer.header("Cache-Status")?.contains("fwd=request") == true)
            // The older entries go once the stream has ended, in the background: a few tries.
            var answer = try await h.get("/r/x")
            for _ in 0..<50 where answer.text == "v1" {
                try await Task.sleep(for: .milliseconds(100))
                answer = try await h.get("/r/x")
            }
            #expect(answer.body.count == 3 << 20, "the older answer is served again: \(answer.header("Cache-Status") ?? "")")
            #expect(answer.header("Cache-Status")?.contains("fwd=miss") == true)
        }
    }
}
