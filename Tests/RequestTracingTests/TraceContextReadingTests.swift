import Testing
import RequestTracing

/// The W3C Trace Context Larder reads itself: a `traceparent`'s ids, read on its bytes, and
/// which of a client's fields a tracer is let see.
@Suite struct TraceContextReadingTests {
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

    @Test func aTracerSeesOneValidTraceparentAndABoundedTracestateBesideIt() {
        let parent = "00-\(Self.traceID)-\(Self.spanID)-01"
        let carrier = IncomingTraceContext.carrier([("TraceParent", parent), ("tracestate", "a=1"), ("TraceState", "b=2")])
        #expect(carrier?.fields.map(\.name) == ["traceparent", "tracestate"])
        #expect(carrier?.fields.last?.value == "a=1,b=2", "several fields are one list")
        #expect(IncomingTraceContext.carrier([("traceparent", parent), ("traceparent", parent)]) == nil, "two: a new trace")
        #expect(IncomingTraceContext.carrier([("traceparent", "00-\(Self.traceID)-\(Self.spanID)-01,\(parent)")]) == nil)
        #expect(IncomingTraceContext.carrier([("tracestate", "a=1")]) == nil, "no tracestate without a traceparent")
        let members = (0...IncomingTraceContext.maxMembers).map { "k\($0)=v" }.joined(separator: ",")
        #expect(IncomingTraceContext.carrier([("traceparent", parent), ("tracestate", members)])?.fields.count == 1, "33 members")
        let long = "k=" + String(repeating: "v", count: IncomingTraceContext.maxTraceState)
        #expect(IncomingTraceContext.carrier([("traceparent", parent), ("tracestate", long)])?.fields.count == 1, "past 512 bytes")
        #expect(IncomingTraceContext.carrier([("traceparent", parent), ("tracestate", "k=v\u{7}")])?.fields.count == 1, "a control byte")
    }
}
