#if canImport(Glibc)
import Glibc
#endif
import Caching
import HTTPCore
import Logging
import Synchronization
import Locking

/// One log line as bytes, in either output format: logfmt (`time=… level=… msg="…"
/// key=value`, a value quoted when it is empty or holds a space, `"`, `=`, `\` or a
/// control) or one JSON object (numbers as numbers). Written straight into a byte buffer,
/// with no String per field, because every request's access line goes through here.
struct LogLine: ~Copyable {
    /// A field's value as the line writes it.
    enum Value {
        case text(String)
        case integer(Int)
        /// A count of thousandths written as a decimal (`1234` → `1.234`, `2000` → `2.0`),
        /// as Swift prints a Double of that value.
        case thousandths(Int)
        /// Boxed: inline, `Logger.MetadataValue` (an existential among its cases) made every
        /// copy of a `Value` go through value witnesses, seven times per access line.
        indirect case metadata(Logger.MetadataValue)
        /// A header field's octets, read in place (obs-text stands for ISO-8859-1, as in
        /// `FieldText`): the access log's `cache_status` costs no String.
        case octets(ArraySlice<UInt8>)

        /// The same value for a log handler other than `LogOutput`.
        var metadata: Logger.MetadataValue {
            switch self {
            case .text(let text): .string(text)
            case .integer(let number): .stringConvertible(number)
            case .thousandths(let count): .stringConvertible(Double(count) / 1000)
            case .metadata(let value): value
            case .octets(let octets): .string(FieldText.decode(octets))
            }
        }
    }

    private var bytes: ByteBuffer
    private let json: Bool

    /// What every line of one format, level and logger starts with, around its timestamp:
    /// made once by a writer of many lines (the access log), so a line costs two copies.
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
        head.beforeTime.withUnsafeBytes { before in head.afterTime.withUnsafeBytes { start(before: before, after: $0) } }
    }

    /// The line up to the message, from a head's two parts kept elsewhere (`RenderedPieces`).
    init(json: Bool, beforeTime: UnsafeRawBufferPointer, afterTime: UnsafeRawBufferPointer) {
        self.init(json: json, capacity: 512)
        start(before: beforeTime, after: afterTime)
    }

    private mutating func start(before: UnsafeRawBufferPointer, after: UnsafeRawBufferPointer) {
        bytes.append(before)
        appendTimestamp()
        bytes.append(after)
    }

    /// An access line's message, `METHOD TARGET STATUS`, written without making it a String
    /// first (the spaces in it always quote it, in either format).
    mutating func writeAccessMessage(method: String, target: String, status: Int) {
        bytes.append(0x22)
        escape(method)
        bytes.append(0x20)
        escape(target)
        bytes.append(0x20)
        bytes.append(decimal: status)
        bytes.append(0x22)
    }

    /// Bytes already formatted for this line's format (fields rendered once, ahead of time).
    mutating func append(rendered: UnsafeRawBufferPointer) {
        bytes.append(rendered)
    }

    /// The field as this format writes it, for `append(rendered:)`.
    static func rendered(json: Bool, _ key: String, _ value: Value) -> [UInt8] {
        var line = LogLine(json: json)
        line.field(key, value)
        return line.bytes.array
    }

    private init(json: Bool, capacity: Int = 64) {
        self.json = json
        bytes = ByteBuffer(capacity: capacity)
    }

    mutating func field(_ key: String, _ value: Value) {
        writeKey(key)
        write(value)
    }

    /// What comes before a field's value in this format (` key=` or `,"key":`), for lines
    /// that write the same keys every time (`append(rendered:)`, then `write`).
    static func keyPrefix(json: Bool, _ key: String) -> [UInt8] {
        var line = LogLine(json: json)
        line.writeKey(key)
        return line.bytes.array
    }

    private mutating func writeKey(_ key: String) {
        if json {
            append(",")
            quote(key)
            append(":")
        } else {
            append(" ")
            append(key)
            append("=")
        }
    }

    /// A field's value, after its key.
    mutating func write(_ value: Value) {
        switch value {
        case .text(let text): quote(text, bare: !json)
        case .octets(let octets):
            // Text above ASCII is written as the UTF-8 of the characters it stands for.
            guard octets.allSatisfy({ $0 < 0x80 }) else { return quote(FieldText.decode(octets), bare: !json) }
            octets.withUnsafeBufferPointer { quote(utf8: $0, bare: !json) }
        case .integer(let number): bytes.append(decimal: number)
        case .thousandths(let count): appendThousandths(count)
        case .metadata(let metadata):
            if case .stringConvertible(let convertible) = metadata {
                switch convertible {
                case let number as Int:
                    bytes.append(decimal: number)
                    return
                case let number as Double where number.isFinite:
                    append(String(number))
                    return
                default: break
                }
            }
            quote(metadata.description, bare: !json)
        }
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

    private mutating func escape(_ text: String) {
        var text = text
        text.withUTF8 { JSONString.escape($0, into: &bytes) }
    }

    private mutating func appendThousandths(_ count: Int) {
        if count < 0 { bytes.append(0x2D) }
        let magnitude = count.magnitude
        bytes.append(decimal: Int(magnitude / 1000))
        bytes.append(0x2E)
        var fraction = Int(magnitude % 1000)
        if fraction == 0 {
            bytes.append(0x30)
            return
        }
        var width = 3
        while fraction % 10 == 0 {
            fraction /= 10
            width -= 1
        }
        let digits = fraction < 10 ? 1 : fraction < 100 ? 2 : 3
        for _ in digits..<width { bytes.append(0x30) }
        bytes.append(decimal: fraction)
    }

    // MARK: Time

    /// The date and time to the second (`2026-11-21T20:45:00.`), made once per second:
    /// a busy server logs thousands of lines in each.
    private static let secondText = Locked<(second: Int, text: [UInt8])>((-1, []))

    /// RFC 3339 UTC time with milliseconds.
    private mutating func appendTimestamp() {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let second = Int(now.tv_sec)
        let text = Self.secondText.withLock { cached in
            if cached.second != second {
                // `…:00Z` becomes `…:00.`, the milliseconds and `Z` follow.
                cached = (second, Array(UTCTime(epochSeconds: second).iso8601.utf8.dropLast()) + [0x2E])
            }
            return cached.text
        }
        bytes.append(text)
        let millis = Int(now.tv_nsec / 1_000_000)
        if millis < 100 { bytes.append(0x30) }
        if millis < 10 { bytes.append(0x30) }
        bytes.append(decimal: millis)
        bytes.append(0x5A)
    }
}
