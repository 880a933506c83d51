#if canImport(Glibc)
public import Glibc
#endif

extension UnsafeBufferPointer where Element == UInt8 {
    /// Whether these bytes are exactly `literal`'s: names read from outside (a field name, a
    /// `Cache-Control` directive) compared with the few a reader knows, with no String for
    /// either and one `memcmp`.
    @inlinable
    public func isExactly(_ literal: StaticString) -> Bool {
        literal.utf8CodeUnitCount == count && (count == 0 || memcmp(literal.utf8Start, baseAddress!, count) == 0)
    }
}
