#if canImport(Glibc)
import Glibc
#endif

/// The field names most messages carry, as most peers spell them. A name read from outside
/// (a request, a stored entry) that matches one exactly is taken as the literal: it is
/// neither checked as UTF-8 nor copied, and it is a token by construction. A String per
/// field name was a measurable part of parsing a request and of reading an entry from disk.
public enum KnownFieldNames {
    /// The literal for `bytes`, or nil when they are not one of the names, as spelt here.
    public static func literal(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        func matches(_ name: StaticString) -> Bool {
            name.utf8CodeUnitCount == bytes.count && memcmp(name.utf8Start, bytes.baseAddress!, bytes.count) == 0
        }
        return switch bytes.count {
        case 3 where matches("Age"): "Age"
        case 4 where matches("Host"): "Host"
        case 4 where matches("Date"): "Date"
        case 4 where matches("ETag"): "ETag"
        case 4 where matches("Vary"): "Vary"
        case 6 where matches("Accept"): "Accept"
        case 6 where matches("Server"): "Server"
        case 7 where matches("Expires"): "Expires"
        case 10 where matches("User-Agent"): "User-Agent"
        case 10 where matches("Connection"): "Connection"
        case 12 where matches("Content-Type"): "Content-Type"
        case 13 where matches("Cache-Control"): "Cache-Control"
        case 13 where matches("If-None-Match"): "If-None-Match"
        case 13 where matches("Authorization"): "Authorization"
        case 13 where matches("Last-Modified"): "Last-Modified"
        case 14 where matches("Content-Length"): "Content-Length"
        case 15 where matches("Accept-Encoding"): "Accept-Encoding"
        case 15 where matches("Accept-Language"): "Accept-Language"
        default: nil
        }
    }
}
