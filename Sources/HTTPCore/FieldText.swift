/// Field values are octets, not text: a client or origin may send obs-text (0x80–0xFF) that
/// is not UTF-8, and a gateway must pass those bytes on unchanged (RFC 9110 §5.5).
///
/// Larder keeps field values in `String`s with one Unicode scalar per octet (ISO-8859-1),
/// so every byte survives the round trip; values that are plain ASCII, nearly all of them,
/// take the fast path both ways and are ordinary strings.
public enum FieldText {
    /// The string for a field value's octets, one scalar per byte.
    public static func decode(_ bytes: some Collection<UInt8>) -> String {
        if bytes.allSatisfy({ $0 < 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
        var text = String()
        text.unicodeScalars.reserveCapacity(bytes.count)
        for byte in bytes { text.unicodeScalars.append(Unicode.Scalar(byte)) }
        return text
    }

    /// Appends the octets a value string stands for.
    @inline(__always)
    public static func append(_ text: String, to out: inout [UInt8]) {
        withOctets(text) { out.append(contentsOf: $0) }
    }

    /// Calls `body` with the octets a value string stands for: read in place when the value
    /// is ASCII, as nearly all are. Scalars above 0xFF (text Larder wrote itself, never bytes
    /// it received) go out as UTF-8.
    @inline(__always)
    public static func withOctets<R>(_ text: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        var text = text
        if text.withUTF8({ $0.allSatisfy { $0 < 0x80 } }) { return text.withUTF8(body) }
        var octets: [UInt8] = []
        for scalar in text.unicodeScalars {
            if scalar.value <= 0xFF {
                octets.append(UInt8(scalar.value))
            } else {
                octets.append(contentsOf: String(scalar).utf8)
            }
        }
        return octets.withUnsafeBufferPointer(body)
    }

    /// The octets of a value string.
    public static func bytes(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        append(text, to: &out)
        return out
    }
}
