import Caching
import Foundation
import HTTPServer

/// Turns cache answers into HTTP responses: the headers every cached answer carries
/// (`Cache-Control` with the full lifetime, `Age`, strong `ETag`, `Cache-Status`), client
/// conditional requests (304), and cache failures as problem+json.
enum CachedResponse {
    /// One answer from the cache: `Age` and `Cache-Status` rendered now, everything else
    /// from the value's prepared fields (re-rendered only if the lifetime differs).
    static func make(_ value: RenderedBody, age: Int, lifetime: Int, cacheControl: (Int) -> String, cacheStatus: String,
                     request: HTTPRequest) -> HTTPResponse {
        let value = value.lifetime == lifetime ? value
            : RenderedBody(body: value.body, date: value.date, lifetime: lifetime, cacheControl: cacheControl(lifetime))
        // Age before the prepared Date: linters that read fields in order judge clock skew with Age known.
        var headers = HTTPHeaders()
        headers.add("Age", String(age))
        headers.add("Cache-Status", cacheStatus)
        if ifNoneMatch(request.headers.values("if-none-match"), matches: value.etag) {
            return HTTPResponse(status: 304, headers: headers, prepared: value.validators)
        }
        return HTTPResponse(status: 200, headers: headers, prepared: value.full, body: value.body)
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
