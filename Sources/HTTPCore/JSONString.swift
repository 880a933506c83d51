/// Where bytes are appended: a plain array, or a buffer of one's own (the access log's line),
/// so that one JSON escape serves both.
public protocol ByteSink: ~Copyable {
    mutating func append(_ byte: UInt8)
    mutating func append(_ bytes: UnsafeRawBufferPointer)
}

extension Array: ByteSink where Element == UInt8 {
    @inlinable public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        append(contentsOf: bytes)
    }
}

/// JSON string literal encoding (RFC 8259 §7), without Foundation: `"` and `\` escaped,
/// controls as `\n`, `\r`, `\t` or `\u00XX`, every other byte (UTF-8 above ASCII included)
/// as it is. Problem documents, the weather body, the admin API and JSON log lines all write
/// their strings through `escape`.
public enum JSONString {
    /// What a JSON string escapes: controls, `"` and `\`. Made where it is used (the compiler
    /// folds it to constants) rather than stored: another module reaches a stored one through
    /// its once-only initialiser, four times per access line.
    @inlinable public static var escaped: ByteSet { ByteSet(below: 0x20, 0x22, 0x5C, 0x5C, 0x5C) }

    /// `s` as a JSON string literal, quotes included.
    public static func quote(_ s: String) -> String {
        var out: [UInt8] = []
        append(s, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `s` as a JSON string literal, quotes included.
    public static func append(_ s: String, to out: inout [UInt8]) {
        var s = s
        out.append(0x22)
        s.withUTF8 { escape($0, into: &out) }
        out.append(0x22)
    }

    /// Appends the inside of a JSON string literal for `source`. Runs of bytes that need no
    /// escape are found a word at a time and copied whole: a byte-by-byte append was most of
    /// an access line's cost. Inlinable, so each sink gets a copy of its own.
    @inlinable
    public static func escape<Sink: ByteSink & ~Copyable>(_ source: UnsafeBufferPointer<UInt8>, into sink: inout Sink) {
        let escaped = escaped
        var run = 0
        while let index = escaped.firstIndex(in: source, from: run) {
            sink.append(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: source[run..<index])))
            run = index + 1
            let byte = source[index]
            sink.append(0x5C)
            switch byte {
            case 0x22, 0x5C: sink.append(byte)
            case 0x0A: sink.append(0x6E)
            case 0x0D: sink.append(0x72)
            case 0x09: sink.append(0x74)
            default:
                sink.append(0x75)
                sink.append(0x30)
                sink.append(0x30)
                sink.append(Hex.digits[Int(byte >> 4)])
                sink.append(Hex.digits[Int(byte & 0xF)])
            }
        }
        sink.append(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: source[run...])))
    }
}
