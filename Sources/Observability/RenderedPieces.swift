/// Byte strings made once and appended to every access line (line heads, keys, the
/// logger's own fields), kept in one allocation that lives as long as its owner.
///
/// An array per piece was retained and released each time a line appended it, a dozen
/// times per line; a piece here is a pointer and a count, with no reference counting.
/// Immutable after `init`, so one instance is read by every event loop at once.
final class RenderedPieces: @unchecked Sendable {
    private let storage: UnsafeMutableRawBufferPointer
    private let spans: UnsafeMutableBufferPointer<(start: Int, count: Int)>
    let count: Int

    init(_ pieces: [[UInt8]]) {
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, pieces.reduce(0) { $0 + $1.count }), alignment: 16)
        let spans = UnsafeMutableBufferPointer<(start: Int, count: Int)>.allocate(capacity: max(1, pieces.count))
        var start = 0
        for (index, piece) in pieces.enumerated() {
            UnsafeMutableRawBufferPointer(rebasing: storage[start..<start + piece.count]).copyBytes(from: piece)
            spans[index] = (start, piece.count)
            start += piece.count
        }
        self.storage = storage
        self.spans = spans
        count = pieces.count
    }

    deinit {
        storage.deallocate()
        spans.deallocate()
    }

    @inline(__always)
    subscript(index: Int) -> UnsafeRawBufferPointer {
        precondition(index >= 0 && index < count, "no such piece")
        let span = spans[index]
        return UnsafeRawBufferPointer(start: storage.baseAddress!.advanced(by: span.start), count: span.count)
    }
}
