/// The byte classes of HTTP field syntax (RFC 9110 §5.1, §5.5, §5.6.2), shared by everything
/// that reads bytes from outside: the request parser, the origin response check, and the
/// disk entry codec. No I/O; every function is total.
public enum FieldSyntax {
    @inlinable @inline(__always) public static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    @inline(__always) public static func hexValue(_ b: UInt8) -> Int? {
        switch b {
        case 0x30...0x39: Int(b - 0x30)
        case 0x41...0x46: Int(b - 0x41 + 10)
        case 0x61...0x66: Int(b - 0x61 + 10)
        default: nil
        }
    }

    /// tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
    @inlinable @inline(__always) public static func isTokenByte(_ b: UInt8) -> Bool {
        // One bit per ASCII byte, as constants: no table behind a lazy global on every byte.
        b < 64 ? (0x03FF_6CFA_0000_0000 as UInt64) >> b & 1 == 1 : b < 128 && (0x57FF_FFFF_C7FF_FFFE as UInt64) >> (b - 64) & 1 == 1
    }

    /// A non-empty run of tchar: a method, a field name, a transfer coding.
    @inlinable
    public static func isToken(_ bytes: some Collection<UInt8>) -> Bool {
        // Inlinable, so a caller's collection type is specialised rather than walked generically.
        !bytes.isEmpty && bytes.allSatisfy(isTokenByte)
    }

    /// field-vchar / SP / HTAB: VCHAR and obs-text (0x80–0xFF) are allowed; CR, LF, NUL,
    /// DEL and the other controls are not (RFC 9110 §5.5).
    @inlinable @inline(__always) public static func isValueByte(_ b: UInt8) -> Bool { b == 0x09 || (b >= 0x20 && b != 0x7F) }

    /// Whether a whole field value (already trimmed or not) is valid.
    @inlinable
    public static func isValue(_ bytes: some Sequence<UInt8>) -> Bool { bytes.allSatisfy(isValueByte) }
}
