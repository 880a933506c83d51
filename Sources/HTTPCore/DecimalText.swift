/// Decimal digits of an integer appended to a byte buffer without making a String: status
/// lines, `Content-Length` and log fields are written this way on every answer.
/// Measured (`larder-bench pieces`): 30–40 ns per number against 50–78 ns through `String`.
public enum DecimalText {
    public static func append(_ value: Int, to out: inout [UInt8]) {
        if value >= 0, value < 10 {
            out.append(UInt8(0x30 + value))
            return
        }
        withDigits(value) { out.append(contentsOf: $0) }
    }

    /// The digits of `value` (after a `-` when it is negative), for a writer of its own.
    @inlinable
    public static func withDigits<R>(_ value: Int, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 21) { digits in
            var rest = value.magnitude
            var start = 21
            repeat {
                start -= 1
                digits[start] = UInt8(0x30 + rest % 10)
                rest /= 10
            } while rest > 0
            if value < 0 {
                start -= 1
                digits[start] = 0x2D
            }
            return body(UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }
}
