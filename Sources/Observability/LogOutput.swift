#if canImport(Glibc)
import Glibc
#endif
import HTTPServer
import Logging
import Settings

/// Log lines on standard output, as logfmt (`time=2026-11-21T20:45:00.123Z level=info
/// msg="listening on …" key=value`, a value with a space, `"` or `=` quoted) or one JSON
/// object per line (numbers as numbers), so container runtimes and log shippers can read
/// them. Times are UTC with milliseconds. Every line, access lines included, comes through
/// `log(event:)`; what it needs per line beyond the event is made ahead of time (each
/// level's head, the handler's own fields rendered), since every request logs a line.
public struct LogOutput: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:] {
        didSet { own = metadata.sorted { $0.key < $1.key }.map { ($0.key, LogLine.rendered(json: json, $0.key, .metadata($0.value))) } }
    }
    private let label: String
    private let json: Bool
    /// Where lines go: the process's standard output, or a test's pipe.
    let sink: LogSink
    /// How a line of each level (in `Logger.Level.allCases` order) begins.
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

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var line = LogLine(head: heads[Logger.Level.allCases.firstIndex(of: event.level) ?? 0])
        line.message(event.message.description)
        // The event's fields and the handler's (the event's win), merged in key order.
        var next = 0
        if let fields = event.metadata {
            for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
                while next < own.count, own[next].key <= key {
                    if own[next].key < key { own[next].rendered.withUnsafeBytes { line.append(rendered: $0) } }
                    next += 1
                }
                line.field(key, .metadata(value))
            }
        }
        for field in own[next...] { field.rendered.withUnsafeBytes { line.append(rendered: $0) } }
        line.finish(into: sink)
    }
}
