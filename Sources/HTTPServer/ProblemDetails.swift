import HTTPCore
import Bodies
/// An RFC 9457 problem document: the one shape every error of this server and its
/// services takes, always with `Cache-Control: no-store` so no cache keeps an error. The
/// type is `about:blank`, so the title is the status phrase (RFC 9457 §4.2.1); what went
/// wrong is in `detail`, in words for the caller (never an internal host, a port or a
/// library's message), and each bad input in `errors`.
public struct ProblemDetails: Sendable, Equatable {
    /// One bad input, by name (a query parameter), and why.
    public struct InputError: Error, Sendable, Equatable {
        public let name: String
        public let reason: String

        public init(name: String, reason: String) {
            self.name = name
            self.reason = reason
        }
    }

    public var status: Int
    public var title: String
    public var detail: String
    public var type: String
    public var errors: [InputError]

    public init(status: Int, detail: String, errors: [InputError] = []) {
        self.status = status
        self.title = ReasonPhrase.of(status)
        self.detail = detail
        self.type = "about:blank"
        self.errors = errors
    }

    public var json: String {
        var json = "{\"type\":\(JSONString.quote(type)),\"title\":\(JSONString.quote(title)),"
            + "\"status\":\(status),\"detail\":\(JSONString.quote(detail))"
        if !errors.isEmpty {
            let items = errors.map { "{\"name\":\(JSONString.quote($0.name)),\"reason\":\(JSONString.quote($0.reason))}" }
            json += ",\"errors\":[" + items.joined(separator: ",") + "]"
        }
        return json + "}"
    }

    /// The response, with extra header fields (such as `Allow` on 405) added.
    public func response(extraHeaders: [(String, String)] = []) -> HTTPResponse {
        var headers = HTTPHeaders([("Content-Type", "application/problem+json"), ("Cache-Control", "no-store")])
        for (name, value) in extraHeaders { headers.add(name, value) }
        return HTTPResponse(status: status, headers: headers, body: json)
    }
}
