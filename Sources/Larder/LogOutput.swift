#if canImport(Glibc)
import Glibc
#endif
import HTTPServer
import Logging
import Synchronization

/// Log lines on standard output, as logfmt (`time=2026-11-21T20:45:00.123Z level=info
/// msg="listening on …" key=value`, a value with a space, `"` or `=` quoted) or one JSON
/// object per line (numbers as numbers), so container runtimes and log shippers can read
/// them. Times are UTC with milliseconds.
public struct LogOutput: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    private let label: String
    private let json: Bool

    public init(label: String, level: Logger.Level, format: ServeSettings.LogFormat) {
        self.label = label
        self.logLevel = level
        self.json = format == .json
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
        LogSink.shared.append(line.finish())
    }

    /// A line begun with an access line's message, for `AccessLog`'s fast path, which adds
    /// its fields (and this handler's, `sortedMetadata` rendered once) itself, in key order.
    func accessLine(level: Logger.Level, method: String, target: String, status: Int) -> LogLine {
        LogLine(json: json, level: level, label: label, method: method, target: target, status: status)
    }

    var writesJSON: Bool { json }

    var sortedMetadata: [(key: String, value: Logger.MetadataValue)] {
        metadata.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }
}
