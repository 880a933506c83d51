public import InMemoryTracing
public import Tracing

/// swift-distributed-tracing's in-memory tracer, speaking W3C Trace Context
/// (`traceparent`, `tracestate`) as a real exporter's tracer does, so a test sees the ids an
/// origin received and an access line names: the in-memory tracer propagates its own keys.
public struct TestTracer: Tracer {
    public let recorder: InMemoryTracer

    public init() {
        recorder = InMemoryTracer(idGenerator: .init(nextTraceID: { Self.hex(16) }, nextSpanID: { Self.hex(8) }))
    }

    private static func hex(_ bytes: Int) -> String {
        (0..<bytes).map { _ in
            let byte = UInt8.random(in: 1...255)
            return String(byte >> 4, radix: 16) + String(byte & 15, radix: 16)
        }.joined()
    }

    public var finishedSpans: [FinishedInMemorySpan] { recorder.finishedSpans }

    /// Forgets every span, for a test's end: a span keeps its context, and Larder's contexts
    /// keep the tracer (`TracerKey`), so the recorder holding spans is a cycle that
    /// LeakSanitizer (`make sanitize`) reports as leaked.
    public func clear() { recorder.clearAll(includingActive: true) }

    public func startSpan<Instant: TracerInstant>(_ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
                                                  at instant: @autoclosure () -> Instant, function: String, file fileID: String,
                                                  line: UInt) -> InMemorySpan {
        recorder.startSpan(operationName, context: context(), ofKind: kind, at: instant(), function: function, file: fileID, line: line)
    }

    public func forceFlush() {}

    public func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        guard let span = context.inMemorySpanContext else { return }
        injector.inject("00-\(span.traceID)-\(span.spanID)-01", forKey: "traceparent", into: &carrier)
        if let state = context[TraceState.self] { injector.inject(state, forKey: "tracestate", into: &carrier) }
    }

    public func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {
        guard let parent = extractor.extract(key: "traceparent", from: carrier) else { return }
        let parts = parent.split(separator: "-")
        guard parts.count == 4 else { return }
        context.inMemorySpanContext = InMemorySpanContext(traceID: String(parts[1]), spanID: String(parts[2]), parentSpanID: nil)
        if let state = extractor.extract(key: "tracestate", from: carrier) { context[TraceState.self] = state }
    }

    private enum TraceState: ServiceContextKey {
        typealias Value = String
    }
}
