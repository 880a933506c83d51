/// OWS (RFC 9110 §5.6.3): the one way every module trims spaces and tabs around field
/// values and list members.
extension StringProtocol {
    /// Drops optional whitespace (SP, HTAB) at both ends. On the bytes, as OWS is defined:
    /// by Characters, it cost more than the rest of parsing a stored entry's Cache-Control.
    @inlinable
    public func trimmingOWS() -> Substring {
        let text = Substring(self)
        let bytes = text.utf8
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { bytes.formIndex(after: &start) }
        while start < end {
            let last = bytes.index(before: end)
            guard bytes[last] == 0x20 || bytes[last] == 0x09 else { break }
            end = last
        }
        return text[start..<end]
    }
}
