public import HTTPCore
public import CacheVocabulary
public import Bodies

/// What a handler answers. The server adds `Date` (unless given), `Content-Length` and
/// `Connection`; the handler adds everything else.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: ResponseFields
    public var body: Body
    /// The `Content-Length` a HEAD answer states when the handler has no body at hand (a
    /// gateway relaying an origin's HEAD response); otherwise the body's length is sent.
    public var headContentLength: Int?
    /// Informational responses sent ahead of this one (a gateway passing on 103 Early Hints),
    /// to HTTP/1.1 clients only (RFC 9110 §15.2).
    public var interim: [InterimResponse] = []
    /// How a cache answered, left by the handler for whatever wraps it (the access log and
    /// metrics). Never sent.
    public var cacheOutcome: CacheOutcome = .none
    /// Told once, on the connection's loop, when the exchange ends: how many body bytes went
    /// to the client's socket (all of them; as many as had gone when the connection closed;
    /// 0 when the answer was never sent). For whatever wraps the handler and must know what
    /// was sent rather than what was promised (the access log's `bytes`).
    public var bodySent: (@Sendable (_ bytes: Int) -> Void)? = nil

    /// Bodies this long or longer (and every body in a file) leave after the head in sends of
    /// their own; shorter ones are copied in beside the head and leave with it.
    public static var bodySentApartMinimum: Int { OutputBuffer.sharedBodyMinimum }

    /// Whether this status may carry content (RFC 9110 §6.4.1, §15.3.5, §15.4.5).
    var allowsBody: Bool { !(status < 200 || status == 204 || status == 304) }
}

// The initialisers live in an extension so that the memberwise one exists: it builds the value
// in one step. One that assigns properties one by one built it on the stack, and the optimiser
// left a copy of the whole response there (a retain and a release of each field).
extension HTTPResponse {
    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.init(status: status, headers: ResponseFields(headers), body: .bytes(body))
    }

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: Body) {
        self.init(status: status, headers: ResponseFields(headers), body: body)
    }

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: String) {
        self.init(status: status, headers: ResponseFields(headers), body: .bytes(Array(body.utf8)))
    }

    /// A response whose fixed fields were rendered ahead of time (a stored answer's).
    public init(status: Int, shared: RenderedFields, body: Body = .empty) {
        self.init(status: status, headers: ResponseFields(shared: shared), body: body)
    }
}

/// The standard reason phrases for the statuses this server and its users send.
enum ReasonPhrase {
    static func of(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 102: "Processing"
        case 103: "Early Hints"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 203: "Non-Authoritative Information"
        case 204: "No Content"
        case 206: "Partial Content"
        case 300: "Multiple Choices"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 406: "Not Acceptable"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 410: "Gone"
        case 411: "Length Required"
        case 412: "Precondition Failed"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 416: "Range Not Satisfiable"
        case 417: "Expectation Failed"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        default: ""
        }
    }
}
