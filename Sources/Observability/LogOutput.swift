#if canImport(Glibc)
import Glibc
#endif
import HTTPServer
import Logging
import Synchronization
import Settings

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

    public init(label: String, level: Logger.Level, format: ServeSettings.LogFormat) {
        self.init(label: label, level: level, format: format, sink: .shared)
    }

    init(label: String, level: Logger.Level, format: ServeSettings.LogFormat, sink: LogSink) {
        self.label = label
        self.logLevel = level
        self.json = format == .json
        self.sink = sink
        heads = Logger.Level.allCases.map { LogLine.Head(json: format == .json, level: $0, label: label) }
    }

    /// Installs this handler for every logger of the process.
    public static func bootstrap(level: String, format: ServeSettings.LogFormat) {
        let level = ServeSettings.logLevel(named: level) ?? .info
        LogSink.shared.configure(json: format == .json)
        // Lines still gathering for the next batch are written before the process exits.
        atexit { LogSink.shared.flush() }
        LoggingSystem.bootstrap { LogOutput(label: $0, level: level, format: format) }
    }

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
        // The event's fields in key order, merged with the handler's, already sorted. Their
        // keys and indices are sorted in place on the stack, each value read once as it is
        // written: sorting the dictionary's indices, each comparison reading both entries
        // back, cost 2,700 instructions per access line (callgrind toggled on
        // `EventLoop.service`, `larder-bench hit-path` at `info`).
        var next = 0
        withUnsafeTemporaryAllocation(of: (key: String, index: Logger.Metadata.Index).self, capacity: fields.count) { sorted in
            let entries = sorted.baseAddress!
            var count = 0
            var index = fields.startIndex
            while index != fields.endIndex {
                let key = fields.keys[index]
                // Insertion sort: a line has tens of fields at most.
                var place = count
                while place > 0, entries[place - 1].key > key { place -= 1 }
                (entries + place + 1).moveInitialize(from: entries + place, count: count - place)
                (entries + place).initialize(to: (key, index))
                count += 1
                fields.formIndex(after: &index)
            }
            defer { entries.deinitialize(count: count) }
            for (key, index) in UnsafeBufferPointer(start: entries, count: count) {
                while next < own.count, own[next].key <= key {
                    if own[next].key != key { line.append(rendered: own[next].rendered) }
                    next += 1
                }
                line.field(key, fields.values[index])
            }
        }
        for field in own[next...] { line.append(rendered: field.rendered) }
        line.finish(into: sink)
    }

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
