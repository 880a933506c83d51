/// How a cache answered a request, as its `Cache-Status` (RFC 9211) says, in one byte: what
/// a cache leaves on its response for the access log and metrics, which then never read it
/// back out of header text. A stand-in is a stored answer that replaced a failed fetch.
public enum CacheOutcome: UInt8, CaseIterable, Sendable {
    /// Not a cache's answer.
    case none
    case hit
    case stale
    case miss
    case standIn
}
