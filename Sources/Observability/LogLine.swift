#if canImport(Glibc)
import Glibc
#endif
import HTTPCore
import Logging
import Synchronization

/// One log line as bytes, in either output format: logfmt (`time=… level=… msg="…"
/// key=value`, a value quoted when it is empty or holds a space, `"`, `=`, `\` or a
/// control) or one JSON object (numbers as numbers). Written straight into a byte buffer,
/// because every request's access line goes through here. Measured (`larder-bench pieces`):
/// an access line through `LogOutput` costs 1.3 µs against 6.4 µs through swift-log's
/// `StreamLogHandler`.
struct LogLine: ~Copyable {
    private var bytes: ByteBuffer
    private let json: Bool

    /// What every line of one format, level and logger starts with, around its timestamp:
    /// made once per level by `LogOutput`, so a line's head costs two copies.
    struct Head: Sendable {
        let beforeTime: [UInt8]
        let afterTime: [UInt8]
        fileprivate let json: Bool

        init(json: Bool, level: Logger.Level, label: String) {
            self.json = json
            var before = LogLine(json: json)
            var after = LogLine(json: json)
            if json {
                before.append("{\"time\":\"")
                after.append("\",\"level\":\"")
                after.append(level.rawValue)
                after.append("\",\"logger\":")
                after.quote(label)
                after.append(",\"message\":")
            } else {
                before.append("time=")
                after.append(" level=")
                after.append(level.rawValue)
                after.append(" msg=")
            }
            beforeTime = before.bytes.array
            afterTime = after.bytes.array
        }
    }

    init(json: Bool, level: Logger.Level, label: String, message: String) {
        self.init(head: Head(json: json, level: level, label: label))
        quote(message, bare: !json)
    }

    /// The line up to the message, which comes next.
    init(head: Head) {
        self.init(json: head.json, capacity: 512)
        bytes.append(head.beforeTime)
        appendTimestamp()
        bytes.append(head.afterTime)
    }

    /// The line's message, after its head.
    mutating func message(_ text: String) {
        quote(text, bare: !json)
    }

    /// Bytes already formatted for this line's format (fields rendered once, ahead of time).
    mutating func append(rendered: [UInt8]) {
        rendered.withUnsafeBytes { bytes.append($0) }
    }

    /// The field as this format writes it, for `append(rendered:)`.
    static func rendered(json: Bool, _ key: String, _ value: Logger.MetadataValue) -> [UInt8] {
        var line = LogLine(json: json)
        line.field(key, value)
        return line.bytes.array
    }

    private init(json: Bool, capacity: Int = 64) {
        self.json = json
        bytes = ByteBuffer(capacity: capacity)
    }

    mutating func field(_ key: String, _ value: Logger.MetadataValue) {
        writeKey(key)
        write(value)
    }

    private mutating func writeKey(_ key: String) {
        var key = key
        key.withUTF8 { key in
            if json {
                append(",")
                quote(utf8: key, bare: false)
                append(":")
            } else {
                bytes.append(0x20)
                bytes.append(key)
                bytes.append(0x3D)
            }
        }
    }

    /// A field's value, after its key. In JSON, a value given as `stringConvertible` whose
    /// text is a JSON number (an integer, a finite Double) is written as a number; a
    /// `string` is always a string. An `Int`, and a `Double` that is a whole number of
    /// thousandths (an access line's durations), are written without making their text:
    /// `description` and the scan of its text cost 1,900 instructions per access line
    /// (gate path memory-hit-logged).
    private mutating func write(_ value: Logger.MetadataValue) {
        switch value {
        case .string(let text):
            quote(text, bare: !json)
        case .stringConvertible(let convertible):
            if let integer = Self.value(of: convertible, as: Int.self) { return bytes.append(decimal: integer) }
            if let number = Self.value(of: convertible, as: Double.self), let thousandths = Self.thousandths(number) {
                return appendThousandths(thousandths)
            }
            let text = convertible.description
            if json, Self.isJSONNumber(text) { return append(text) }
            quote(text, bare: !json)
        default:
            quote(value.description, bare: !json)
        }
    }

    /// The value when its type is exactly `T` (`Int` or `Double`), read from the existential's
    /// inline buffer, where Swift's ABI keeps any value of three words or fewer that is
    /// bitwise-takable: `as?` cost 285 instructions a field, through the runtime's general
    /// cast (gate path memory-hit-logged).
    private static func value<T: BitwiseCopyable>(of convertible: any CustomStringConvertible & Sendable, as type: T.Type) -> T? {
        guard Swift.type(of: convertible) == type else { return nil }
        return withUnsafeBytes(of: convertible) { $0.load(as: T.self) }
    }

    /// `number` × 1000 when that is a whole number below 10¹⁵, so that `appendThousandths`
    /// writes what `number.description` would (the shortest text that reads back as
    /// `number`, never an exponent in that range); nil otherwise, negative zero included.
    static func thousandths(_ number: Double) -> Int? {
        guard number.sign == .plus, number < 1e12 else { return nil }
        let scaled = (number * 1000).rounded()
        let whole = Int(scaled)
        return Double(whole) / 1000 == number ? whole : nil
    }

    /// `thousandths` / 1000 as `Double.description` writes it: `12.5`, `0.001`, `3.0`.
    private mutating func appendThousandths(_ thousandths: Int) {
        bytes.append(decimal: thousandths / 1000)
        bytes.append(0x2E)
        var fraction = thousandths % 1000
        guard fraction != 0 else { return bytes.append(0x30) }
        var digits = 3
        while fraction % 10 == 0 {
            fraction /= 10
            digits -= 1
        }
        // Zeros before the digits left, to fill `digits` places.
        if digits == 3, fraction < 100 { bytes.append(0x30) }
        if digits >= 2, fraction < 10 { bytes.append(0x30) }
        bytes.append(decimal: fraction)
    }

    /// RFC 8259 §6: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    static func isJSONNumber(_ text: String) -> Bool {
        var bytes = text.utf8[...]
        if bytes.first == 0x2D { bytes = bytes.dropFirst() }
        func digits() -> Int {
            let count = bytes.prefix { (0x30...0x39).contains($0) }.count
            bytes = bytes.dropFirst(count)
            return count
        }
        let first = bytes.first
        let whole = digits()
        guard whole > 0, first != 0x30 || whole == 1 else { return false }
        if bytes.first == 0x2E {
            bytes = bytes.dropFirst()
            guard digits() > 0 else { return false }
        }
        if bytes.first == 0x65 || bytes.first == 0x45 {
            bytes = bytes.dropFirst()
            if bytes.first == 0x2B || bytes.first == 0x2D { bytes = bytes.dropFirst() }
            guard digits() > 0 else { return false }
        }
        return bytes.isEmpty
    }

    /// The finished line, newline included.
    mutating func finish() -> [UInt8] {
        end()
        return bytes.array
    }

    /// Finishes the line and queues it, without a copy of its own.
    consuming func finish(into sink: LogSink) {
        end()
        bytes.withBytes { sink.append($0) }
    }

    private mutating func end() {
        if json { append("}") }
        append("\n")
    }

    // MARK: Writing

    private mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { bytes.append($0) }
    }

    /// A JSON string: `"` and `\` escaped, controls as `\n`, `\r`, `\t` or `\u00XX`. With
    /// `bare` (logfmt), a non-empty run of bytes other than space, `"`, `=`, `\`, DEL and
    /// controls is written as it is.
    private mutating func quote(_ text: String, bare: Bool = false) {
        var text = text
        text.withUTF8 { quote(utf8: $0, bare: bare) }
    }

    /// What a bare logfmt value cannot hold: controls, space, `"`, `=`, `\` and DEL.
    static let quoted = ByteSet(below: 0x21, 0x22, 0x3D, 0x5C, 0x7F)

    private mutating func quote(utf8 source: UnsafeBufferPointer<UInt8>, bare: Bool) {
        if bare, !source.isEmpty, Self.quoted.firstIndex(in: source, from: 0) == nil {
            bytes.append(source)
            return
        }
        bytes.append(0x22)
        JSONString.escape(source, into: &bytes)
        bytes.append(0x22)
    }

    // MARK: Time

    /// The date and time to the second (`2026-11-21T20:45:00.`), made once per second by
    /// each thread: a busy server logs thousands of lines in each, and a copy per thread
    /// shares no lock between the event loops.
    private static let secondText = PerThread<(second: Int, text: [UInt8])> { (-1, []) }

    /// RFC 3339 UTC time with milliseconds.
    private mutating func appendTimestamp() {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let second = Int(now.tv_sec)
        Self.secondText.withValue { cached in
            if cached.second != second {
                // `…:00Z` becomes `…:00.`, the milliseconds and `Z` follow.
                cached = (second, Array(UTCTime(epochSeconds: second).iso8601.utf8.dropLast()) + [0x2E])
            }
            bytes.append(cached.text)
        }
        let millis = Int(now.tv_nsec / 1_000_000)
        if millis < 100 { bytes.append(0x30) }
        if millis < 10 { bytes.append(0x30) }
        bytes.append(decimal: millis)
        bytes.append(0x5A)
    }
}
