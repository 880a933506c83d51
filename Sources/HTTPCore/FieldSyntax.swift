/// The byte classes of HTTP field syntax (RFC 9110 §5.1, §5.5, §5.6.2), shared by everything
/// that reads bytes from outside: the request parser, the origin response check, and the
/// disk entry codec. No I/O; every function is total.
public enum FieldSyntax {
    @inline(__always) public static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    @inline(__always) public static func hexValue(_ b: UInt8) -> Int? {
        switch b {
        case 0x30...0x39: Int(b - 0x30)
        case 0x41...0x46: Int(b - 0x41 + 10)
        case 0x61...0x66: Int(b - 0x61 + 10)
        default: nil
        }
    }

    /// tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
    @inline(__always) public static func isTokenByte(_ b: UInt8) -> Bool { tokenTable[Int(b)] }

    /// A non-empty run of tchar: a method, a field name, a transfer coding.
    public static func isToken(_ bytes: some Collection<UInt8>) -> Bool {
        !bytes.isEmpty && bytes.allSatisfy(isTokenByte)
    }

    /// field-vchar / SP / HTAB: VCHAR and obs-text (0x80–0xFF) are allowed; CR, LF, NUL,
    /// DEL and the other controls are not (RFC 9110 §5.5).
    @inline(__always) public static func isValueByte(_ b: UInt8) -> Bool { b == 0x09 || (b >= 0x20 && b != 0x7F) }

    /// Whether a whole field value (already trimmed or not) is valid.
    public static func isValue(_ bytes: some Sequence<UInt8>) -> Bool { bytes.allSatisfy(isValueByte) }

    private static let tokenTable: [Bool] = (0..<256).map { i in
        let b = UInt8(i)
        if (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) { return true }
        return "!#$%&'*+-.^_`|~".utf8.contains(b)
    }
}
