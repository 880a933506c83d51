import HTTPCore
/// An RFC 9457 problem document: the one shape every error of this server and its
/// services takes, always with `Cache-Control: no-store` so no cache keeps an error.
public struct ProblemDetails: Sendable, Equatable {
    public var status: Int
    public var title: String
    public var detail: String
    public var type: String

    public init(status: Int, detail: String, title: String? = nil, type: String = "about:blank") {
        self.status = status
        self.title = title ?? ReasonPhrase.of(status)
        self.detail = detail
        self.type = type
    }

    public var json: String {
        "{\"type\":\(JSONString.quote(type)),\"title\":\(JSONString.quote(title)),"
            + "\"status\":\(status),\"detail\":\(JSONString.quote(detail))}"
    }

    /// The response, with extra header fields (such as `Allow` on 405) added.
    public func response(extraHeaders: [(String, String)] = []) -> HTTPResponse {
        var headers = HTTPHeaders([("Content-Type", "application/problem+json"), ("Cache-Control", "no-store")])
        for (name, value) in extraHeaders { headers.add(name, value) }
        return HTTPResponse(status: status, headers: headers, body: json)
    }
}

/// JSON string literal encoding (RFC 8259 §7), without Foundation.
public enum JSONString {
    public static func quote(_ s: String) -> String {
        var out = "\""
        out.reserveCapacity(s.utf8.count + 2)
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where c.value < 0x20:
                let hex = String(c.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
