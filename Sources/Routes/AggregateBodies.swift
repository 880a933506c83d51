import Caching
import Synchronization

/// The bodies an aggregate made, with their ETags, by the parts' JSON they were made of.
/// Keyed by where each part's JSON is stored, as `ShapeMemo` is: while the parts are the
/// same stored answers their JSON is the same arrays, and assembling and hashing the body
/// again on every request was a tenth of an aggregate's cost under perf. Each body keeps its
/// parts' arrays, so no address can be reused by other bytes while it is here. At most a
/// MiB is kept (a body and its parts counted twice its size); a body over an eighth of that
/// is made every time.
final class AggregateBodies: Sendable {
    /// What the kept bodies and their parts may take, at most; then it starts again.
    private static let byteLimit = 1 << 20
    private struct Made {
        let parts: [[UInt8]?]
        let body: [UInt8]
        let etag: String
    }
    private let made = Mutex<(bodies: [[Int]: Made], bytes: Int)>(([:], 0))

    /// The body for these parts (their JSON, or none for a missing one) and its strong ETag,
    /// made by `make` when new.
    func body(of parts: [AggregateAnswer.Result], _ make: () -> [UInt8]) -> (body: [UInt8], etag: String) {
        let key = parts.map { part in part.shaped.map { $0.json.withUnsafeBufferPointer { Int(bitPattern: $0.baseAddress) } } ?? -1 }
        if let known = made.withLock({ $0.bodies[key] }) { return (known.body, known.etag) }
        let body = make()
        let etag = RenderedResponse.etag(of: body)
        let bytes = 2 * body.count
        guard bytes <= Self.byteLimit / 8 else { return (body, etag) }
        made.withLock { made in
            if made.bytes + bytes > Self.byteLimit { made = ([:], 0) }
            made.bodies[key] = Made(parts: parts.map { $0.shaped?.json }, body: body, etag: etag)
            made.bytes += bytes
        }
        return (body, etag)
    }
}
