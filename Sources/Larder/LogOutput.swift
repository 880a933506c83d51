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
        var line: String
        if json {
            line = "{\"time\":\"\(time)\",\"level\":\"\(event.level)\",\"logger\":\(JSONString.quote(label)),"
                + "\"message\":\(JSONString.quote(event.message.description))"
            for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
                line += "," + JSONString.quote(key) + ":" + Self.json(value)
            }
            line += "}\n"
        } else {
            line = "time=\(time) level=\(event.level) msg=" + Self.logfmt(event.message.description)
            for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
                line += " " + key + "=" + Self.logfmt(value.description)
            }
            line += "\n"
        }
        Self.write(line)
    }

    /// A number stays a number in JSON; anything else is a string.
    static func json(_ value: Logger.MetadataValue) -> String {
        if case .stringConvertible(let convertible) = value {
            switch convertible {
            case let number as Int: return String(number)
            case let number as Double where number.isFinite: return String(number)
            default: break
            }
        }
        return JSONString.quote(value.description)
    }

    /// A logfmt value: bare when it is a non-empty run of characters other than space,
    /// `"`, `=` and controls; otherwise quoted, with `"` and `\` escaped and controls written
    /// as escapes.
    static func logfmt(_ value: String) -> String {
        let bare = !value.isEmpty && value.utf8.allSatisfy { $0 > 0x20 && $0 != 0x22 && $0 != 0x3D && $0 != 0x5C && $0 != 0x7F }
        return bare ? value : JSONString.quote(value)
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

    /// RFC 3339 UTC time with milliseconds.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var tm = tm()
        gmtime_r(&seconds, &tm)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let millis = Int(now.tv_nsec / 1_000_000)
        let fraction = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        return "\(tm.tm_year + 1900)-\(two(tm.tm_mon + 1))-\(two(tm.tm_mday))T\(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec)).\(fraction)Z"
    }
}
