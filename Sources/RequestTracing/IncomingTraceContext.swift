/// The client's W3C Trace Context as Larder lets a tracer see it: one valid `traceparent`
/// (several fields, or one field listing several, start a new trace, as the W3C test suite
/// expects), and its `tracestate` only beside it, only printable ASCII, at most 32 members
/// and 512 bytes. Checked here rather than left to the tracer: a lax one (a test's) would
/// otherwise continue a trace under ids the spec forbids, and carry the rest to the origin.
public enum IncomingTraceContext {
    /// Longest `tracestate` passed on whole; W3C asks vendors to keep at least 512 bytes.
    public static let maxTraceState = 512
    /// Most `tracestate` list-members (W3C Trace Context, section 3.3.1.1).
    public static let maxMembers = 32

    /// The fields to extract from; nil when the request brings no valid `traceparent`.
    public static func carrier(_ fields: some Sequence<(name: String, value: String)>) -> FieldList? {
        var parents: [String] = []
        var states: [String] = []
        for field in fields {
            if field.name.utf8.count == 11, field.name.lowercased() == "traceparent" { parents.append(field.value) }
            if field.name.utf8.count == 10, field.name.lowercased() == "tracestate" { states.append(field.value) }
        }
        guard parents.count == 1, TraceIDs(traceparent: parents[0]) != nil else { return nil }
        var carrier = FieldList(fields: [("traceparent", parents[0])])
        // Several tracestate fields are one list (RFC 9110 section 5.3).
        let state = states.joined(separator: ",")
        if !state.isEmpty, state.utf8.count <= maxTraceState, state.utf8.allSatisfy({ (0x20...0x7E).contains($0) || $0 == 0x09 }),
           state.split(separator: ",").count <= maxMembers {
            carrier.fields.append(("tracestate", state))
        }
        return carrier
    }
}
