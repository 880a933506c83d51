/// Decimal digits of an integer appended to a byte buffer without making a String: status
/// lines, `Content-Length` and log fields are written this way on every answer.
public enum DecimalText {
    public static func append(_ value: Int, to out: inout [UInt8]) {
        if value < 0 { out.append(0x2D) }
        var rest = value.magnitude
        if rest < 10 {
            out.append(UInt8(0x30 + rest))
            return
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = 20
            repeat {
                start -= 1
                digits[start] = UInt8(0x30 + rest % 10)
                rest /= 10
            } while rest > 0
            out.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }
}
