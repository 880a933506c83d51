/// Lower-case hexadecimal text of bytes: file names of the disk tier, ETags, request ids and
/// the `\u00XX` escapes of JSON. Foundation's `String(format:)` costs about a microsecond a
/// byte, and these run on every disk hit.
public enum Hex {
    /// The sixteen digits, for writers of hex text of their own (request ids, escapes).
    public static let digits = Array("0123456789abcdef".utf8)

    /// Written straight into the string's storage: no array, no generic iteration.
    @inlinable
    public static func string(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { write(bytes, into: $0) }
    }

    /// Writes the digits of `bytes` at the start of `text` (which has room for them) and
    /// answers how many.
    @inlinable
    public static func write(_ bytes: UnsafeRawBufferPointer, into text: UnsafeMutableBufferPointer<UInt8>) -> Int {
        digits.withUnsafeBufferPointer { digits in
            for (i, byte) in bytes.enumerated() {
                text[2 * i] = digits[Int(byte >> 4)]
                text[2 * i + 1] = digits[Int(byte & 0x0F)]
            }
            return bytes.count * 2
        }
    }
}
