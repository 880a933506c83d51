/// OWS (RFC 9110 §5.6.3): the one way every module trims spaces and tabs around field
/// values and list members.
extension StringProtocol {
    /// Drops optional whitespace (SP, HTAB) at both ends.
    public func trimmingOWS() -> Substring {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return s
    }
}
