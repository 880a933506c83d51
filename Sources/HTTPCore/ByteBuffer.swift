/// A growable run of bytes that one owner writes: a log line while it is made, a
/// connection's responses until they are sent (`OutputBuffer`), the fields of an answer
/// Larder renders on a disk hit.
///
/// Each is a dozen or more appends of a few bytes each. `Array.append(contentsOf:)` checks
/// that its storage is not shared and copies through a generic path on every one, about a
/// hundred instructions an append, more than the copies; here an append is a capacity check
/// and a `memcpy`. It cannot be copied (`~Copyable`), so no two owners ever free or write the
/// same storage. Storage is allocated at the first append, not before: an idle connection
/// holds none.
///
/// Measured: rendering responses into it rather than `[UInt8]` took a memory hit from
/// 15,732 to 14,942 instructions (gate path memory-hit).
public struct ByteBuffer: ~Copyable, ByteSink {
    @usableFromInline var base: UnsafeMutableRawPointer?
    @usableFromInline var storageCapacity = 0
    @usableFromInline var written = 0
    /// The least storage allocated at the first append (more when that append needs more).
    @usableFromInline let initialCapacity: Int

    public init(capacity: Int = 512) {
        initialCapacity = max(16, capacity)
    }

    deinit { base?.deallocate() }

    /// The bytes written.
    public var count: Int { written }

    /// The storage's size, 0 before the first append.
    public var capacity: Int { storageCapacity }

    @inlinable
    public mutating func append(_ byte: UInt8) {
        if written == storageCapacity { grow(toHold: 1) }
        base.unsafelyUnwrapped.storeBytes(of: byte, toByteOffset: written, as: UInt8.self)
        written += 1
    }

    @inlinable
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        if storageCapacity - written < bytes.count { grow(toHold: bytes.count) }
        (base.unsafelyUnwrapped + written).copyMemory(from: source, byteCount: bytes.count)
        written += bytes.count
    }

    @inlinable
    public mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        append(UnsafeRawBufferPointer(bytes))
    }

    @inlinable
    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    @inlinable
    public mutating func append(_ text: StaticString) {
        append(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// The decimal digits of `value`.
    @inlinable
    public mutating func append(decimal value: Int) {
        DecimalText.withDigits(value) { append($0) }
    }

    /// Makes room for `extra` more bytes, so the appends that follow grow the storage once.
    public mutating func reserve(_ extra: Int) {
        if storageCapacity - written < extra { grow(toHold: extra) }
    }

    /// The bytes from `offset` on (all of them by default).
    @inlinable
    public func withBytes<R, E: Error>(from offset: Int = 0, _ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        precondition(offset >= 0 && offset <= written, "an offset outside the buffer")
        return try body(UnsafeRawBufferPointer(start: base.map { $0 + offset }, count: written - offset))
    }

    public var array: [UInt8] { withBytes { Array($0) } }

    /// Drops the first `n` bytes, moving the rest to the front of the same storage.
    public mutating func removeFront(_ n: Int) {
        precondition(n >= 0 && n <= written, "more bytes removed than were written")
        guard n > 0, let base else { return }
        (base).copyMemory(from: base + n, byteCount: written - n)
        written -= n
    }

    /// Forgets the bytes; the storage is kept for the next ones, or given back.
    public mutating func removeAll(keepingCapacity: Bool) {
        written = 0
        guard !keepingCapacity else { return }
        base?.deallocate()
        base = nil
        storageCapacity = 0
    }

    /// Storage for at least `extra` more bytes, the written ones kept.
    @usableFromInline
    mutating func grow(toHold extra: Int) {
        let (needed, overflow) = written.addingReportingOverflow(extra)
        precondition(!overflow, "a byte buffer larger than memory")
        // Double (appends stay linear), or exactly what is needed when that is more: a
        // response's body is reserved whole, and doubling up to it could waste nearly as much.
        let doubled = storageCapacity > Int.max / 2 ? needed : max(storageCapacity * 2, initialCapacity)
        let newCapacity = max(doubled, needed)
        let grown = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        if let base {
            grown.copyMemory(from: base, byteCount: written)
            base.deallocate()
        }
        base = grown
        storageCapacity = newCapacity
    }
}
