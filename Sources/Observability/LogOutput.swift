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
/// them. Times are UTC with milliseconds.
public struct LogOutput: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    private let label: String
    private let json: Bool
    /// Where lines go: the process's standard output, or a test's pipe.
    let sink: LogSink

    public init(label: String, level: Logger.Level, format: ServeSettings.LogFormat) {
        self.init(label: label, level: level, format: format, sink: .shared)
    }

    init(label: String, level: Logger.Level, format: ServeSettings.LogFormat, sink: LogSink) {
        self.label = label
        self.logLevel = level
        self.json = format == .json
        self.sink = sink
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
        // The handler's fields and the event's (which win), in key order; no merged dictionary
        // is built.
        var fields = event.metadata.map(Array.init) ?? []
        for (key, value) in self.metadata where event.metadata?[key] == nil { fields.append((key, value)) }
        fields.sort { $0.0 < $1.0 }
        var line = LogLine(json: json, level: event.level, label: label, message: event.message.description)
        for (key, value) in fields { line.field(key, .metadata(value)) }
        line.finish(into: sink)
    }

    /// How this handler's lines at `level` begin, for `AccessLog`'s fast path, which writes
    /// the rest (and this handler's fields, `sortedMetadata` rendered once) itself, in key order.
    func lineHead(level: Logger.Level) -> LogLine.Head {
        LogLine.Head(json: json, level: level, label: label)
    }

    var writesJSON: Bool { json }

    var sortedMetadata: [(key: String, value: Logger.MetadataValue)] {
        metadata.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }
}
