public import Tracing

/// The tracer of the request a task works for, and where its spans hang: what the layers
/// under the routes (tiers, single flight, the upstream fetch, Redis) read to make child
/// spans. The tracer travels in the task's `ServiceContext`, beside the span it belongs to,
/// rather than in a global: Larder is given its tracer (nil when tracing is off), and a task
/// that serves no traced request reads one task-local and finds nothing.
public struct Trace: Sendable {
    public let tracer: any Tracer
    /// The span the running code is a child of (and the tracer's key in it).
    public let context: ServiceContext

    /// The trace the running task works for; nil when its request is not traced.
    @inlinable
    public static var current: Trace? {
        guard let context = ServiceContext.current, let tracer = context[TracerKey.self] else { return nil }
        return Trace(tracer: tracer, context: context)
    }

    /// The trace at `context` (which need not carry the tracer: the trace's spans below it do).
    public init(tracer: any Tracer, context: ServiceContext) {
        self.tracer = tracer
        var context = context
        // A span's context mostly has it already, from its parent's: writing it again would
        // copy the context's storage, which the span shares.
        if context[TracerKey.self] == nil { context[TracerKey.self] = tracer }
        self.context = context
    }

    /// A context for the first span of a request: the client's trace (its `traceparent`,
    /// extracted) and the tracer, for the spans below it. Only a valid client context reaches
    /// the tracer (`IncomingTraceContext`): tracers differ in how strictly they read it.
    public static func root(_ tracer: any Tracer, extractedFrom fields: some Sequence<(name: String, value: String)>) -> ServiceContext {
        var context = ServiceContext.topLevel
        context[TracerKey.self] = tracer
        if let carrier = IncomingTraceContext.carrier(fields) { tracer.extract(carrier, into: &context, using: FieldList.Reader()) }
        return context
    }

    /// Starts a child span of this trace; the caller ends it.
    public func start(_ name: String, kind: SpanKind) -> any Span {
        tracer.startSpan(name, context: context, ofKind: kind)
    }

    /// Runs `body` inside a child span of this trace (bound as the task's context, so spans
    /// `body` makes are its children), ended when `body` returns.
    public func span<Value>(_ name: String, kind: SpanKind = .internal, _ body: (any Span) async -> Value) async -> Value {
        let span = start(name, kind: kind)
        defer { span.end() }
        return await ServiceContext.$current.withValue(Trace(tracer: tracer, context: span.context).context) { await body(span) }
    }

    /// `span` for work that may fail: its error is recorded and sets the span's status.
    public func span<Value>(_ name: String, kind: SpanKind = .internal, _ body: (any Span) async throws -> Value) async throws -> Value {
        let span = start(name, kind: kind)
        defer { span.end() }
        do {
            return try await ServiceContext.$current.withValue(Trace(tracer: tracer, context: span.context).context) { try await body(span) }
        } catch {
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error))
            throw error
        }
    }

    /// A trace of its own for work a request started but does not wait for (a
    /// stale-while-revalidate refresh): a new root span, linked to the span that started it,
    /// so its time is not counted in the request's trace.
    public func detached<Value>(_ name: String, kind: SpanKind = .internal, _ body: (any Span) async -> Value) async -> Value {
        var root = ServiceContext.topLevel
        root[TracerKey.self] = tracer
        let span = tracer.startSpan(name, context: root, ofKind: kind)
        span.addLink(SpanLink(context: context, attributes: [:]))
        defer { span.end() }
        return await ServiceContext.$current.withValue(Trace(tracer: tracer, context: span.context).context) { await body(span) }
    }

    /// The `traceparent` and `tracestate` fields this trace's span sends on (W3C Trace
    /// Context), as the tracer writes them: none when it writes neither.
    public var propagated: [(name: String, value: String)] {
        var fields = FieldList(fields: [])
        tracer.inject(context, into: &fields, using: FieldList.Writer())
        return fields.fields
    }
}

/// Where a request's tracer rides in its `ServiceContext`.
public enum TracerKey: ServiceContextKey {
    public typealias Value = any Tracer
    public static var nameOverride: String? { "larder-tracer" }
}

/// Header fields as a tracer's carrier: read by name (case-insensitively) and written.
public struct FieldList: Sendable {
    public var fields: [(name: String, value: String)]

    public init(fields: [(name: String, value: String)]) { self.fields = fields }

    public struct Reader: Extractor {
        public init() {}
        public func extract(key: String, from carrier: FieldList) -> String? {
            carrier.fields.first { $0.name.lowercased() == key.lowercased() }?.value
        }
    }

    public struct Writer: Injector {
        public init() {}
        public func inject(_ value: String, forKey key: String, into carrier: inout FieldList) {
            carrier.fields.removeAll { $0.name.lowercased() == key.lowercased() }
            carrier.fields.append((key, value))
        }
    }
}
