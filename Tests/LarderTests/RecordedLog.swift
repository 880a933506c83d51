import Logging
import Synchronization

/// A logger whose lines the test reads back: level and message, nothing printed.
final class RecordedLog: Sendable {
    private let lines = Mutex<[(level: Logger.Level, message: String)]>([])

    func logger(level: Logger.Level = .info) -> Logger {
        var logger = Logger(label: "larder-test") { _ in Handler(sink: self) }
        logger.logLevel = level
        return logger
    }

    func messages(at level: Logger.Level) -> [String] {
        lines.withLock { $0.filter { $0.level == level }.map(\.message) }
    }

    fileprivate func append(_ level: Logger.Level, _ message: String) {
        lines.withLock { $0.append((level, message)) }
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
            sink.append(event.level, event.message.description)
        }
    }
}
