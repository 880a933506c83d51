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
        // The handler's fields and the event's (which win), in key order; no merged dictionary
        // is built, since this runs for every access line.
        var fields = event.metadata.map(Array.init) ?? []
        for (key, value) in self.metadata where event.metadata?[key] == nil { fields.append((key, value)) }
        fields.sort { $0.0 < $1.0 }
        let time = Self.timestamp()
        var line: String
        if json {
            line = "{\"time\":\"\(time)\",\"level\":\"\(event.level)\",\"logger\":\(JSONString.quote(label)),"
                + "\"message\":\(JSONString.quote(event.message.description))"
            for (key, value) in fields {
                line += "," + JSONString.quote(key) + ":" + Self.json(value)
            }
            line += "}\n"
        } else {
            line = "time="
            line.reserveCapacity(256)
            line += time + " level=" + event.level.rawValue + " msg=" + Self.logfmt(event.message.description)
            for (key, value) in fields {
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
        var value = value
        let bare = value.withUTF8 { bytes in
            guard !bytes.isEmpty else { return false }
            for byte in bytes where byte <= 0x20 || byte == 0x22 || byte == 0x3D || byte == 0x5C || byte == 0x7F { return false }
            return true
        }
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

    /// The date and time to the second, made once per second (a busy server logs thousands
    /// of lines in each).
    private static let secondText = Mutex<(second: Int, text: String)>((-1, ""))

    /// RFC 3339 UTC time with milliseconds.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let second = Int(now.tv_sec)
        let prefix = secondText.withLock { cached in
            if cached.second != second {
                var seconds = now.tv_sec
                var tm = tm()
                gmtime_r(&seconds, &tm)
                func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
                cached = (second, "\(tm.tm_year + 1900)-\(two(tm.tm_mon + 1))-\(two(tm.tm_mday))T\(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec)).")
            }
            return cached.text
        }
        let millis = Int(now.tv_nsec / 1_000_000)
        return prefix + (millis < 10 ? "00" : millis < 100 ? "0" : "") + String(millis) + "Z"
    }
}
