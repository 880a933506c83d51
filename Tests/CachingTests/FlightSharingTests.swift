import HTTPCore
import Testing
import TestSupport
@testable import Caching

/// Concurrent misses share one flight only when method, key and every header field agree;
/// field names agree in any case, and the trace context fields do not count.
@Suite(.timeLimit(.minutes(1))) struct FlightSharingTests {
    private static func request(_ fields: [(String, String)]) -> CacheRequest {
        CacheRequest(method: .get, resource: "k", url: "http://upstream.test/k", headers: HTTPHeaders(fields))
    }

    /// Both requests at once behind a closed gate: how many fetches began, and how many answers were collapsed.
    private func flights(_ first: [(String, String)], _ second: [(String, String)]) async throws -> (fetches: Int, collapsed: Int) {
        let h = try Harness()
        h.fetcher.closeGate()
        let answers = await withTaskGroup(of: CacheAnswer?.self) { group in
            group.addTask { try? await h.cache.answer(Self.request(first)).get() }
            _ = await eventually { h.fetcher.calls == 1 }
            group.addTask { try? await h.cache.answer(Self.request(second)).get() }
            // The second either joins the flight or starts its own fetch.
            _ = await eventually { h.fetcher.calls == 2 || h.cache.flights.waiting == 1 }
            h.fetcher.openGate()
            return await group.reduce(into: [CacheAnswer?]()) { $0.append($1) }
        }
        #expect(answers.allSatisfy { $0 != nil })
        return (h.fetcher.calls, answers.filter { $0?.status.collapsed == true }.count)
    }

    @Test func fieldNamesInAnotherCaseShareTheFlight() async throws {
        let (fetches, collapsed) = try await flights([("Accept", "text/plain"), ("X-Tenant", "a")], [("accept", "text/plain"), ("x-TENANT", "a")])
        #expect(fetches == 1)
        #expect(collapsed == 1)
    }

    @Test func anotherValueIsAFlightOfItsOwn() async throws {
        let (fetches, collapsed) = try await flights([("Accept", "text/plain")], [("Accept", "text/Plain")])
        #expect(fetches == 2)
        #expect(collapsed == 0)
    }

    @Test func anotherFieldIsAFlightOfItsOwn() async throws {
        let (fetches, _) = try await flights([("Accept", "text/plain")], [("Accept", "text/plain"), ("Accept-Language", "fr")])
        #expect(fetches == 2)
    }

    @Test func tracedCallersOfDifferentTracesShareTheFlight() async throws {
        let first = [("Accept", "text/plain"), ("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
                     ("tracestate", "vendor=one")]
        let second = [("Accept", "text/plain"), ("TraceParent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")]
        let (fetches, collapsed) = try await flights(first, second)
        #expect(fetches == 1)
        #expect(collapsed == 1)
    }

    @Test func aFieldNamedLikeTraceContextStillCounts() async throws {
        let (fetches, _) = try await flights([("Accept", "text/plain"), ("traceparents", "a")], [("Accept", "text/plain"), ("traceparents", "b")])
        #expect(fetches == 2)
    }
}
