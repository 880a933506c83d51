#if canImport(Glibc)
import Glibc
#endif
import HTTPServer
import Logging
import Synchronization

/// Log lines on standard output, as text (`2026-11-21T20:45:00Z info message key=value`)
/// or one JSON object per line, so container runtimes and log shippers can read them.
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
        let level = Logger.Level(rawValue: level) ?? .info
        LoggingSystem.bootstrap { LogOutput(label: $0, level: level, format: format) }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields = self.metadata
        if let extra = event.metadata { fields.merge(extra) { $1 } }
        let time = Self.timestamp()
        let line: String
        if json {
            var parts = ["\"time\":\"\(time)\"", "\"level\":\"\(event.level)\"", "\"logger\":\(JSONString.quote(label))",
                         "\"message\":\(JSONString.quote(event.message.description))"]
            for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
                parts.append("\(JSONString.quote(key)):\(JSONString.quote(value.description))")
            }
            line = "{" + parts.joined(separator: ",") + "}\n"
        } else {
            let extra = fields.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined()
            line = "\(time) \(event.level) \(event.message)\(extra)\n"
        }
        Self.write(line)
    }

    private static let lock = Mutex(())

    private static func write(_ line: String) {
        lock.withLock { _ in
            var line = line
            line.withUTF8 { bytes in
                var offset = 0
                while offset < bytes.count {
                    let n = Glibc.write(1, bytes.baseAddress! + offset, bytes.count - offset)
                    if n <= 0 { if errno == EINTR { continue }; return }
                    offset += n
                }
            }
        }
    }

    /// RFC 3339 UTC time with seconds.
    static func timestamp() -> String {
        var t = time(nil)
        var tm = tm()
        gmtime_r(&t, &tm)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(tm.tm_year + 1900)-\(two(tm.tm_mon + 1))-\(two(tm.tm_mday))T\(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec))Z"
    }
}
