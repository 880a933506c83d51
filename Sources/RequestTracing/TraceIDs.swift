/// A span's trace and span ids as a W3C `traceparent` gives them
/// (`00-<32 hex trace id>-<16 hex span id>-<flags>`): what the access line carries, read from
/// what the tracer propagates, so Larder needs no tracer's own types to name a span.
public struct TraceIDs: Sendable, Equatable {
    public let traceID: String
    public let spanID: String
    public let sampled: Bool

    /// The ids in a `traceparent` value; nil when it is not one (version 00's form; a later
    /// version may append fields after the flags, each after a `-`). Read on its bytes at
    /// fixed offsets: split into strings it was a tenth of a sampled hit's cost (perf).
    public init?(traceparent: String) {
        var value = traceparent
        guard let ids = value.withUTF8({ Self.parse($0) }) else { return nil }
        self = ids
    }

    private init(traceID: String, spanID: String, sampled: Bool) {
        self.traceID = traceID
        self.spanID = spanID
        self.sampled = sampled
    }

    // version "-" trace id "-" span id "-" flags: 2 + 1 + 32 + 1 + 16 + 1 + 2.
    private static let length = 55
    private static let dashes = [2, 35, 52]
    private static let traceIDBytes = 3..<35
    private static let spanIDBytes = 36..<52
    private static let flagBytes = 53..<55

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> TraceIDs? {
        guard bytes.count >= length, dashes.allSatisfy({ bytes[$0] == UInt8(ascii: "-") }) else { return nil }
        let version = bytes[0..<2]
        guard version.allSatisfy(isLowerHex), !version.elementsEqual("ff".utf8),
              bytes.count == length || (!version.elementsEqual("00".utf8) && bytes[length] == UInt8(ascii: "-")) else { return nil }
        for field in [traceIDBytes, spanIDBytes, flagBytes] {
            guard bytes[field].allSatisfy(isLowerHex) else { return nil }
        }
        guard bytes[traceIDBytes].contains(where: { $0 != UInt8(ascii: "0") }),
              bytes[spanIDBytes].contains(where: { $0 != UInt8(ascii: "0") }) else { return nil }
        let flags = hexValue(bytes[flagBytes.lowerBound]) << 4 | hexValue(bytes[flagBytes.lowerBound + 1])
        return TraceIDs(traceID: String(decoding: bytes[traceIDBytes], as: UTF8.self),
                        spanID: String(decoding: bytes[spanIDBytes], as: UTF8.self), sampled: flags & 1 == 1)
    }

    private static func isLowerHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8 {
        byte <= UInt8(ascii: "9") ? byte - UInt8(ascii: "0") : byte - UInt8(ascii: "a") + 10
    }

    /// The ids of the span `trace` is at, when its tracer propagates it and samples it.
    public static func sampled(in trace: Trace) -> TraceIDs? {
        guard let value = trace.propagated.first(where: { $0.name.utf8.count == 11 && $0.name.lowercased() == "traceparent" })?.value,
              let ids = TraceIDs(traceparent: value), ids.sampled else { return nil }
        return ids
    }
}
