import Caching
import Foundation
import HTTPCore
import Bodies
import CacheVocabulary
import HTTPServer

/// Turns cache answers into HTTP responses for every route: `Age` and `Cache-Status`
/// rendered per answer beside the fields rendered once at store time, client conditional
/// requests (304), ranges, and cache failures as problem+json.
enum CachedResponse {
    /// The response to `request` for one answer. `ranges` says whether `Range` is honoured
    /// (a gateway relays ranges of what it stores; Larder's own JSON is sent whole).
    static func make(_ answer: CacheAnswer, for request: HTTPRequest, ranges: Bool) -> HTTPResponse {
        let rendered = answer.rendered
        let readsOnly = request.method == .get || request.method == .head
        if readsOnly, rendered.status == 200, clientHasCurrentCopy(request, rendered) {
            var response = HTTPResponse(status: 304, shared: rendered.notModifiedFields)
            response.note(answer)
            return response
        }
        // A body still arriving with no stated length has no ranges yet: it is sent whole.
        if ranges, request.method == .get, rendered.status == 200, !rendered.body.isOpenEnded, let range = request.headers["range"],
           rangeApplies(request, answer.entry) {
            let length = rendered.body.count
            switch ByteRange.select(range, length: length) {
            case .whole:
                break
            case .partial(let r):
                var response = HTTPResponse(status: 206, shared: RenderedResponse.partialFields(of: answer.entry),
                                            body: rendered.body.part(r.first...r.last))
                response.note(answer)
                response.headers.add("Content-Range", "bytes \(r.first)-\(r.last)/\(length)")
                return response
            case .unsatisfiable:
                var response = ProblemDetails(status: 416, detail: "The range \(range) is outside the \(length) bytes stored.").response()
                response.headers.add("Content-Range", "bytes */\(length)")
                return response
            }
        }
        var response = HTTPResponse(status: rendered.status, shared: rendered.fields, body: rendered.body)
        response.note(answer)
        response.interim = answer.interim
        if request.method == .head, rendered.body.isEmpty {
            // A relayed HEAD answer has no body at hand: its length is the one the origin stated.
            response.headContentLength = answer.entry.header("content-length").flatMap { Int($0) }
        }
        return response
    }

    /// How long the upstream exchange behind a forwarded answer took (W3C Server-Timing, for
    /// callers and for the access line), from the times the cache stamped on the entry; nil
    /// for hits and for stored answers standing in for a failure.
    static func upstreamMilliseconds(_ answer: CacheAnswer) -> Double? {
        let status = answer.status
        guard status.forward != nil, status.forwardStatus != nil, status.detail != .staleIfError, status.detail != .disconnected else { return nil }
        let seconds = answer.entry.responseTime.timeIntervalSince(answer.entry.requestTime)
        return seconds >= 0 ? (seconds * 10_000).rounded() / 10 : nil
    }

    /// RFC 9110 §13.2.2: `If-None-Match` when present, else `If-Modified-Since`.
    static func clientHasCurrentCopy(_ request: HTTPRequest, _ rendered: RenderedResponse) -> Bool {
        let tags = request.headers.values("if-none-match")
        if !tags.isEmpty {
            if let etag = rendered.etag { return EntityTag.ifNoneMatch(tags, matches: etag) }
            return tags.contains { $0.trimmingOWS() == "*" }
        }
        guard let modified = rendered.modified, let since = request.headers["if-modified-since"].flatMap(HTTPDateParser.parse) else {
            return false
        }
        return modified <= since
    }


    /// RFC 9110 §13.1.5: with `If-Range`, a range only when the validator still matches
    /// (a strong ETag, or the exact Last-Modified date).
    static func rangeApplies(_ request: HTTPRequest, _ entry: CacheEntry) -> Bool {
        guard let condition = request.headers["if-range"] else { return true }
        if condition.hasPrefix("\"") { return entry.etag == condition }
        return entry.lastModified == condition
    }

    /// A failure of the named part (`weather`, `balance`, `origin`): 504 for `only-if-cached`
    /// and timeouts, 503 with `Retry-After` while the upstream backs off or Larder's
    /// connections to it are all busy, the connection's refusal when the request body
    /// failed on its way in, 502 otherwise, with the Cache-Status of what was tried.
    static func failure(_ failure: CacheFailure, part: String) -> HTTPResponse {
        switch failure {
        case .notCached:
            return ProblemDetails(status: 504, detail: "No stored \(part) answer satisfies only-if-cached.").response()
        case .upstream(let upstream, let status) where upstream.bodyRefusedStatus != nil:
            var response = ProblemDetails(status: upstream.bodyRefusedStatus ?? 400, detail: upstream.detail).response()
            response.note(status)
            return response
        case .upstream(let upstream, let status) where upstream.retryAfter != nil:
            let seconds = upstream.retryAfter ?? 1
            let why = upstream.saturated ? "Every connection Larder allows to the \(part) upstream stayed busy, so it was not asked"
                : "The \(part) upstream is backing off and was not asked"
            var response = ProblemDetails(status: 503, detail: why + "; no stored answer may stand in. Retry in \(seconds) s.").response()
            response.headers.add("Retry-After", String(seconds))
            response.note(status)
            return response
        case .upstream(let upstream, let status):
            let code = upstream.timeout ? 504 : 502
            var response = ProblemDetails(status: code, detail: "The \(part) upstream has no usable answer: \(upstream.detail).").response()
            response.note(status)
            return response
        }
    }

    static func notConfigured(part: String) -> HTTPResponse {
        ProblemDetails(status: 503, detail: "No \(part) upstream is configured (set --\(part)-url or LARDER_\(part.uppercased())_URL).")
            .response()
    }

    static func badParameter(_ problem: ParameterProblem) -> HTTPResponse {
        ProblemDetails(status: 400, detail: problem.detail, errors: problem.errors).response()
    }
}

/// The request directives as the cache reads them.
extension RequestDirectives {
    init(_ request: HTTPRequest) {
        self.init(cacheControl: request.headers.values("cache-control"), pragma: request.headers.values("pragma"))
    }
}

extension HTTPResponse {
    /// Adds how the cache answered (`note(_:age:)`) and, for a forwarded answer, how long its
    /// upstream exchange took (`Server-Timing`).
    mutating func note(_ answer: CacheAnswer) {
        note(answer.status, age: answer.age, overridden: answer.entry.header(CacheOverrides.noteField))
        if let upstream = CachedResponse.upstreamMilliseconds(answer) { headers.add("Server-Timing", "upstream;dur=\(upstream)") }
    }

    /// Adds how the cache answered: `Age` (for a stored answer) and `Cache-Status` as the
    /// first fields, and a note for the access log and metrics. In place: a copy of a
    /// response per hit was a measurable part of the hit path.
    /// `overridden` names what of the origin's answer was ignored (`CacheOverrides`), said
    /// as an `override` parameter.
    mutating func note(_ status: CacheStatus, age: Int? = nil, overridden: String? = nil) {
        // Age before the rendered Date: linters that read fields in order judge clock skew with Age known.
        if let age { headers.add("Age", age) }
        headers.add("Cache-Status") { line in
            status.append(to: &line)
            if let overridden { line.append(contentsOf: "; override=\"\(overridden)\"".utf8) }
        }
        cacheOutcome = CacheOutcome(status)
    }
}
