import Foundation
/// A pass-through origin's name in metrics: `scheme://host:port`, the port written out even
/// when it is the scheme's default, with no user part (so no credentials), no base path and
/// the scheme and host in lower case. Routes to one server share its series; the label's
/// values are bounded by the configured origins.
public enum OriginName {
    public static func of(_ origin: String) -> String {
        guard let range = origin.range(of: "://") else { return origin }
        let scheme = origin[..<range.lowerBound].lowercased()
        var authority = origin[range.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        // A port follows the last colon, unless that colon is inside an IPv6 literal.
        let host: Substring
        var port: Substring = ""
        if let colon = authority.lastIndex(of: ":"), !authority[colon...].contains("]") {
            host = authority[..<colon]
            port = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        if port.isEmpty { port = scheme == "https" ? "443" : "80" }
        return "\(scheme)://\(host.lowercased()):\(port)"
    }
}
