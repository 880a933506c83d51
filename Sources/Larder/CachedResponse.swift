import Caching
import Foundation
import HTTPServer

/// Turns cache answers into HTTP responses: the headers every cached answer carries
/// (`Cache-Control` with the full lifetime, `Age`, strong `ETag`, `Cache-Status`), client
/// conditional requests (304), and cache failures as problem+json.
enum CachedResponse {
    /// One answer; `cacheControl` renders the route's Cache-Control from the full lifetime.
    static func make(body: [UInt8], etag: String, date: String, age: Int, cacheControl: String, cacheStatus: String,
                     request: HTTPRequest) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.add("Cache-Control", cacheControl)
        headers.add("Age", String(age))
        // After Age: linters that read fields in order (REDbot) judge Date's clock skew with Age known.
        headers.add("Date", date)
        headers.add("ETag", etag)
        headers.add("Cache-Status", cacheStatus)
        if ifNoneMatch(request.headers.values("if-none-match"), matches: etag) {
            return HTTPResponse(status: 304, headers: headers)
        }
        headers.add("Content-Type", "application/json")
        return HTTPResponse(status: 200, headers: headers, body: body)
    }

    /// RFC 9110 §13.1.2: weak comparison against each listed tag; `*` matches any current representation.
    static func ifNoneMatch(_ fields: [String], matches etag: String) -> Bool {
        guard !fields.isEmpty else { return false }
        let ours = opaque(etag)
        for field in fields {
            for candidate in field.split(separator: ",") {
                let tag = candidate.trimmingCharacters(in: .whitespaces)
                if tag == "*" || opaque(tag) == ours { return true }
            }
        }
        return false
    }

    private static func opaque<S: StringProtocol>(_ tag: S) -> Substring {
        let s = Substring(tag)
        return s.hasPrefix("W/") ? s.dropFirst(2) : s
    }

    /// A failure of the named part (`weather`, `balance`): 504 for `only-if-cached` and
    /// timeouts, 502 otherwise, with the Cache-Status of what was tried.
    static func failure(_ failure: CacheFailure, part: String) -> HTTPResponse {
        switch failure {
        case .notCached:
            return ProblemDetails(status: 504, detail: "No stored \(part) answer satisfies only-if-cached.").response()
        case .upstream(let upstream, let status):
            let code = upstream.timeout ? 504 : 502
            var response = ProblemDetails(status: code, detail: "The \(part) upstream has no usable answer: \(upstream.detail).").response()
            response.headers.add("Cache-Status", status.description)
            return response
        }
    }

    static func notConfigured(part: String) -> HTTPResponse {
        ProblemDetails(status: 503, detail: "No \(part) upstream is configured (set --\(part)-url or LARDER_\(part.uppercased())_URL).")
            .response()
    }

    static func badParameter(_ problem: ParameterProblem) -> HTTPResponse {
        ProblemDetails(status: 400, detail: problem.detail, title: "Invalid parameter '\(problem.name)'").response()
    }
}

/// The request directives as the cache reads them.
extension RequestDirectives {
    init(_ request: HTTPRequest) {
        self.init(cacheControl: request.headers.values("cache-control"), pragma: request.headers.values("pragma"))
    }
}
