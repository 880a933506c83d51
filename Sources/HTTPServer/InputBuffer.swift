/// Bytes read from a connection and not yet consumed by the parser.
///
/// Consumed bytes are dropped lazily (by moving `start`) so parsing a pipelined batch
/// never shifts memory per request.
struct InputBuffer {
    var bytes: [UInt8] = []
    var start = 0

    var count: Int { bytes.count - start }
    var isEmpty: Bool { start == bytes.count }

    subscript(offset: Int) -> UInt8 { bytes[start + offset] }

    mutating func consume(_ n: Int) {
        start += n
        if start == bytes.count {
            bytes.removeAll(keepingCapacity: bytes.capacity <= 64 * 1024)
            start = 0
        }
    }

    /// Moves unconsumed bytes to the front once the consumed prefix dominates.
    mutating func compact() {
        if start > 0, start >= count {
            bytes.removeSubrange(0..<start)
            start = 0
        }
    }

    /// Appends after moving what is unconsumed to the front: bytes consumed but kept would
    /// otherwise grow the storage past the bound on what is unparsed (`EventLoop.read`).
    mutating func append(_ chunk: UnsafeRawBufferPointer) {
        if start > 0 {
            bytes.removeSubrange(0..<start)
            start = 0
        }
        bytes.append(contentsOf: chunk)
    }

    mutating func append(_ chunk: some Sequence<UInt8>) {
        bytes.append(contentsOf: chunk)
    }

    /// The unconsumed bytes, for scans that must not pay a bounds check per byte.
    func withUnsafeBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        bytes.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[start...])) }
    }

    /// The unconsumed bytes at `range` (offsets relative to `start`).
    func slice(_ range: Range<Int>) -> ArraySlice<UInt8> {
        bytes[(start + range.lowerBound)..<(start + range.upperBound)]
    }
}
