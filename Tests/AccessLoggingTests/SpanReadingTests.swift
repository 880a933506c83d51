import Testing
@testable import AccessLogging
import RequestTracing

/// What the server span reads off a request and its answer: the ids of a `traceparent`, read
/// on its bytes, and the tier a `Cache-Status` names.
@Suite struct SpanReadingTests {
    static let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let spanID = "00f067aa0ba902b7"

    @Test func readsTheIdsAndFlagsOfAValidTraceparent() {
        let sampled = TraceIDs(traceparent: "00-\(Self.traceID)-\(Self.spanID)-01")
        #expect(sampled?.traceID == Self.traceID)
        #expect(sampled?.spanID == Self.spanID)
        #expect(sampled?.sampled == true)
        #expect(TraceIDs(traceparent: "00-\(Self.traceID)-\(Self.spanID)-00")?.sampled == false)
        #expect(TraceIDs(traceparent: "00-\(Self.traceID)-\(Self.spanID)-0f")?.sampled == true)
        // A later version may append fields, each after a dash.
        #expect(TraceIDs(traceparent: "01-\(Self.traceID)-\(Self.spanID)-01-what-comes")?.spanID == Self.spanID)
    }

    @Test(arguments: [
        "", "00", "ff-\(traceID)-\(spanID)-01", "00-\(traceID)-\(spanID)-01-extra", "00-\(traceID)-\(spanID)-01 ",
        "01-\(traceID)-\(spanID)-01x", "00-\(traceID.uppercased())-\(spanID)-01", "00-\(traceID)-\(spanID)-0g",
        "00-00000000000000000000000000000000-\(spanID)-01", "00-\(traceID)-0000000000000000-01",
        "00_\(traceID)-\(spanID)-01", "00-\(traceID)-\(spanID)_01", "0-\(traceID)-\(spanID)-01", "00-\(traceID)-\(spanID)-1",
        "00-\(traceID)é-\(spanID)-01",
    ])
    func refusesWhatIsNotATraceparent(_ value: String) {
        #expect(TraceIDs(traceparent: value) == nil)
    }

    @Test func namesTheTierThatAnswered() {
        #expect(AccessLog.tier("Larder; hit") == "memory")
        #expect(AccessLog.tier("Larder; hit; detail=disk") == "disk")
        #expect(AccessLog.tier("Larder;hit;detail=redis") == "redis")
        #expect(AccessLog.tier("Larder; fwd=miss; stored") == "upstream")
        #expect(AccessLog.tier("Larder; fwd=stale; detail=disk") == "upstream")
        #expect(AccessLog.tier("Larder") == nil)
        #expect(AccessLog.tier("Larder; hitch; fwdx=miss") == nil)
    }
}
