public import Logging
import Synchronization
import Locking

/// A logger whose lines the test reads back: level, message and metadata, nothing printed.
/// Shared so each test target that reads what a component logs uses one handler.
public final class RecordedLog: Sendable {
    public struct Line: Sendable {
        public let level: Logger.Level
        public let message: String
        public let metadata: [String: String]
        /// The event's own fields as given, kept as they are, as a handler that ships its
        /// lines later would keep them.
        public let given: Logger.Metadata
    }
    private let lines = Locked<[Line]>([])

    public init() {}

    public func logger(level: Logger.Level = .info) -> Logger {
        var logger = Logger(label: "larder-test") { _ in Handler(sink: self) }
        logger.logLevel = level
        return logger
    }

    public func messages(at level: Logger.Level) -> [String] {
        lines.withLock { $0.filter { $0.level == level }.map(\.message) }
    }

    /// Every line, at every level.
    public var all: [Line] { lines.withLock { $0 } }

    fileprivate func append(_ line: Line) {
        lines.withLock { $0.append(line) }
    }

    private struct Handler: LogHandler {
        let sink: RecordedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            sink.append(Line(level: event.level, message: event.message.description, metadata: merged.mapValues(\.description),
                             given: event.metadata ?? [:]))
        }
    }
}
