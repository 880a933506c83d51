import Caching
import AccessLogging
import RequestTracing
import Tracing

/// Each part of a traced aggregate that is not a memory hit is a span of the request's: one
/// that misses the aggregate's deadline goes on, and ends, after the request's own span.
extension Aggregate {
    static func answer(_ part: LarderRoutes.Part, name: String) async -> Result<CacheAnswer, CacheFailure> {
        guard let trace = Trace.current else { return await part.cache.answer(part.request) }
        return await trace.span("part \(name)") { span in
            let result = await part.cache.answer(part.request)
            var attributes = span.attributes
            attributes["larder.aggregate.part"] = SpanAttribute.string(name)
            switch result {
            case .success(let answer):
                attributes[SpanNames.cacheStatus] = SpanAttribute.string(answer.status.description)
                attributes[SpanNames.cacheTier] = SpanAttribute.string(answer.status.tier.rawValue)
            case .failure:
                span.setStatus(SpanStatus(code: .error))
            }
            span.attributes = attributes
            return result
        }
    }
}
