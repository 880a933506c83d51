#if canImport(Glibc)
import Glibc
#endif
public import Logging
import Synchronization

/// Log lines on standard output, as logfmt (`time=2026-11-21T20:45:00.123Z level=info
/// msg="listening on …" key=value`, a value with a space, `"` or `=` quoted) or one JSON
/// object per line (numbers as numbers), so container runtimes and log shippers can read
/// them. Times are UTC with milliseconds; fields are in key order, the event's winning over
/// the handler's own. Every line, each request's access line included, comes through
/// `log(event:)`, so what a line needs beyond its event is made ahead of time: each level's
/// head and the handler's own fields, rendered.
public struct LogOutput: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:] {
        didSet { own = Self.render(metadata, json: json) }
    }
    private let label: String
    private let json: Bool
    /// Where lines go: the process's standard output, or a test's pipe.
    let sink: LogSink
    /// How a line of each level begins, in `Logger.Level.allCases` order.
    private let heads: [LogLine.Head]
    /// The handler's own fields in key order, each as this format writes it.
    private var own: [(key: String, rendered: [UInt8])] = []

    /// How a line is written: logfmt, or one JSON object per line.
    public enum Format: String, Sendable, Equatable { case text, json }

    public init(label: String, level: Logger.Level, format: Format) {
        self.init(label: label, level: level, format: format, sink: .shared)
    }

    init(label: String, level: Logger.Level, format: Format, sink: LogSink) {
        self.label = label
        self.logLevel = level
        self.json = format == .json
        self.sink = sink
        heads = Logger.Level.allCases.map { LogLine.Head(json: format == .json, level: $0, label: label) }
    }

    /// Installs this handler for every logger of the process.
    public static func bootstrap(level: Logger.Level, format: Format) {
        LogSink.shared.configure(json: format == .json)
        // Lines still gathering for the next batch are written before the process exits.
        atexit { LogSink.shared.flush() }
        LoggingSystem.bootstrap { LogOutput(label: $0, level: level, format: format) }
    }

    /// Writes out every line gathered so far and ends the writer thread (the last act of a
    /// stop, once nothing else logs); a later line is still written, at exit.
    public static func stopWriter() async { await LogSink.shared.stop() }

    /// Writes out every line gathered so far (larder-bench, before it points standard output back).
    @_spi(Bench) public static func flush() { LogSink.shared.flush() }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var line = LogLine(head: heads[Self.headIndex(event.level)])
        line.message(event.message.description)
        guard let fields = event.metadata, !fields.isEmpty else {
            for field in own { line.append(rendered: field.rendered) }
            return line.finish(into: sink)
        }
        // The event's fields in key order, merged with the handler's, already sorted.
        var next = 0
        withUnsafeTemporaryAllocation(of: Logger.Metadata.Index.self, capacity: fields.count) { indices in
            var count = 0
            var index = fields.startIndex
            while index != fields.endIndex {
                indices.initializeElement(at: count, to: index)
                count += 1
                fields.formIndex(after: &index)
            }
            defer { indices.deinitialize() }
            Self.keyOrders.withValue { orders in
                let found = KeyOrder.find(for: fields, indices, in: &orders)
                for position in orders[found].sorted {
                    let key = orders[found].keys[position]
                    while next < own.count, own[next].key <= key {
                        if own[next].key != key { line.append(rendered: own[next].rendered) }
                        next += 1
                    }
                    line.field(key, fields.values[indices[position]])
                }
            }
        }
        for field in own[next...] { line.append(rendered: field.rendered) }
        line.finish(into: sink)
    }

    /// A line's keys as its dictionary holds them, and their order sorted: a busy server
    /// writes line after line with the same keys in the same buckets (the access line's
    /// dictionary is reused, `AccessFields`), so a thread sorts each set of keys once and
    /// keeps the last few (a hit's line, a miss's with `upstream_ms`, an aggregate's with
    /// `parts`); a line only checks that its keys are one of those. Sorting every line cost
    /// 1,900 instructions per access line, its String comparisons most of it (gate path
    /// memory-hit-logged).
    private struct KeyOrder {
        static let kept = 4

        /// Where in `orders` the one that fits `fields` is, made (and kept, the oldest let go)
        /// when none does; an index, so that the order is read where it is kept.
        static func find(for fields: Logger.Metadata, _ indices: UnsafeMutableBufferPointer<Logger.Metadata.Index>,
                         in orders: inout [KeyOrder]) -> Int {
            if let found = orders.firstIndex(where: { $0.fits(fields, indices) }) { return found }
            if orders.count == kept { orders.removeLast() }
            orders.insert(KeyOrder(fields, indices), at: 0)
            return 0
        }

        /// The keys in the dictionary's order.
        let keys: [String]
        /// Places in `keys`, in the keys' sorted order.
        let sorted: [Int]

        init(_ fields: Logger.Metadata, _ indices: UnsafeMutableBufferPointer<Logger.Metadata.Index>) {
            let keys = indices.map { fields.keys[$0] }
            self.keys = keys
            sorted = keys.indices.sorted { keys[$0] < keys[$1] }
        }

        /// Whether `fields` holds these keys in this order.
        func fits(_ fields: Logger.Metadata, _ indices: UnsafeMutableBufferPointer<Logger.Metadata.Index>) -> Bool {
            keys.count == indices.count && indices.indices.allSatisfy { fields.keys[indices[$0]] == keys[$0] }
        }
    }

    private static let keyOrders = PerThread { [KeyOrder]() }

    private static func headIndex(_ level: Logger.Level) -> Int {
        switch level {
        case .trace: 0
        case .debug: 1
        case .info: 2
        case .notice: 3
        case .warning: 4
        case .error: 5
        case .critical: 6
        }
    }

    private static func render(_ metadata: Logger.Metadata, json: Bool) -> [(key: String, rendered: [UInt8])] {
        metadata.keys.sorted().map { ($0, LogLine.rendered(json: json, $0, metadata[$0]!)) }
    }
}
