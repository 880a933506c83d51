import Caching
import Foundation
import HTTPCore
import RequestTracing
import Tracing

/// The upstream exchange of a traced request as a client span (OpenTelemetry's HTTP client
/// conventions), whose context the request carries on in `traceparent` and `tracestate`: a
/// client's own, on a pass-through request, is replaced, so the origin's spans hang under
/// Larder's. Untraced, a request goes as it came.
extension UpstreamFetcher {
    func traced(_ request: CacheRequest, in trace: Trace) async throws -> CacheEntry {
        try await trace.span(SpanMethod.name(request.method.description), kind: .client) { span in
            var request = request
            // The client's fields go whether or not the tracer writes both: a tracestate left
            // beside Larder's traceparent would claim a trace it is not part of.
            request.headers.remove("traceparent")
            request.headers.remove("tracestate")
            for (name, value) in Trace(tracer: trace.tracer, context: span.context).propagated { request.headers.set(name, value) }
            var attributes = span.attributes
            attributes["http.request.method"] = SpanAttribute.string(SpanMethod.attribute(request.method.description))
            if let url = URLComponents(string: url(request)), let host = url.host {
                attributes["server.address"] = SpanAttribute.string(host)
                attributes["server.port"] = SpanAttribute.int64(Int64(url.port ?? (url.scheme == "https" ? 443 : 80)))
                // No query: a built-in route's may hold its credential.
                attributes["url.full"] = SpanAttribute.string("\(url.scheme ?? "http")://\(url.percentEncodedHost ?? host)\(url.port.map { ":\($0)" } ?? "")\(url.percentEncodedPath)")
            }
            attributes["larder.upstream"] = SpanAttribute.string(name)
            span.attributes = attributes
            do {
                let entry = try await exchange(request)
                span.attributes["http.response.status_code"] = SpanAttribute.int64(Int64(entry.status))
                if entry.status >= 500 {
                    span.attributes["error.type"] = SpanAttribute.string(String(entry.status))
                    span.setStatus(SpanStatus(code: .error))
                }
                return entry
            } catch let failure as UpstreamFailure {
                if let status = failure.upstreamStatus { span.attributes["http.response.status_code"] = SpanAttribute.int64(Int64(status)) }
                span.attributes["error.type"] = SpanAttribute.string(failure.detail)
                throw failure
            }
        }
    }
}
