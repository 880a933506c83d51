import Caching
import Bodies

/// The bodies an aggregate made, with their ETags, by the parts' JSON they were made of.
/// Keyed by where each part's JSON is stored, as `ShapeMemo` is: while the parts are the
/// same stored answers their JSON is the same arrays, and assembling and hashing the body
/// again on every request was a tenth of an aggregate's cost under perf. Each body keeps its
/// parts' arrays, so no address can be reused by other bytes while it is here. At most a
/// MiB is kept (a body and its parts counted twice its size); a body over an eighth of that
/// is made every time.
final class AggregateBodies: Sendable {
    private struct Made {
        let parts: [[UInt8]?]
        let body: [UInt8]
        let etag: String
    }
    /// A body and its parts count twice the body's size.
    private let made = BoundedMemo<[Int], Made>(budget: 1 << 20)

    /// The body for these parts (their JSON, or none for a missing one) and its strong ETag,
    /// made by `make` when new.
    func body(of parts: [AggregateAnswer.Result], _ make: () -> [UInt8]) -> (body: [UInt8], etag: String) {
        let key = parts.map { part in part.shaped.map { $0.json.withUnsafeBufferPointer { Int(bitPattern: $0.baseAddress) } } ?? -1 }
        if let known = made[key] { return (known.body, known.etag) }
        let body = make()
        let etag = RenderedResponse.etag(of: body)
        made.keep(Made(parts: parts.map { $0.shaped?.json }, body: body, etag: etag), for: key, cost: 2 * body.count)
        return (body, etag)
    }
}
