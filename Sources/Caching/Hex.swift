/// Lower-case hexadecimal text of bytes: file names of the disk tier and ETags. Foundation's
/// `String(format:)` costs about a microsecond a byte, and these run on every disk hit.
public enum Hex {
    /// The sixteen digits, for writers of hex text of their own (request ids, log escapes).
    public static let digits = Array("0123456789abcdef".utf8)

    public static func string(_ bytes: some Sequence<UInt8>) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
