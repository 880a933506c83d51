/// A span's trace and span ids as a W3C `traceparent` gives them
/// (`00-<32 hex trace id>-<16 hex span id>-<flags>`): what the access line carries, read from
/// what the tracer propagates, so Larder needs no tracer's own types to name a span.
public struct TraceIDs: Sendable, Equatable {
    public let traceID: String
    public let spanID: String
    public let sampled: Bool

    /// The ids in a `traceparent` value; nil when it is not one (version 00's form; a later
    /// version may append fields after the flags).
    public init?(traceparent: String) {
        let parts = traceparent.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[0].utf8.count == 2, parts[0] != "ff", parts[1].utf8.count == 32, parts[2].utf8.count == 16,
              parts[3].utf8.count == 2, parts[0...3].allSatisfy({ $0.utf8.allSatisfy(Self.isLowerHex) }),
              parts[0] != "00" || parts.count == 4, let flags = UInt8(parts[3], radix: 16),
              parts[1].utf8.contains(where: { $0 != UInt8(ascii: "0") }), parts[2].utf8.contains(where: { $0 != UInt8(ascii: "0") }) else {
            return nil
        }
        traceID = String(parts[1])
        spanID = String(parts[2])
        sampled = flags & 1 == 1
    }

    private static func isLowerHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }

    /// The ids of the span `trace` is at, when its tracer propagates it and samples it.
    public static func sampled(in trace: Trace) -> TraceIDs? {
        guard let value = trace.propagated.first(where: { $0.name.lowercased() == "traceparent" })?.value,
              let ids = TraceIDs(traceparent: value), ids.sampled else { return nil }
        return ids
    }
}
