import HTTPCore

/// Bytes rendered for a connection and not yet sent: responses are written at its end in
/// request order, and sent from its front.
///
/// Raw storage, not `[UInt8]`: a response is a dozen small pieces (status line, rendered
/// fields, `Date`, `Content-Length`, body), and `Array.append(contentsOf:)` cost about a
/// hundred instructions a piece (a uniqueness check, a generic copy) where a capacity check
/// and a `memcpy` do. Not copyable, so the storage has one owner and is freed once.
struct OutputBuffer: ~Copyable {
    private var base: UnsafeMutableRawPointer?
    private(set) var capacity = 0
    /// Bytes written.
    private(set) var count = 0
    /// Bytes from the front already sent.
    private(set) var sent = 0

    /// Storage beyond this is given back once everything in it is sent.
    static let keptCapacity = 256 * 1024

    init() {}

    deinit { base?.deallocate() }

    /// Bytes written and not yet sent.
    var pending: Int { count - sent }

    /// Makes room for `extra` more bytes, so a response's pieces grow the storage once.
    mutating func reserve(_ extra: Int) {
        if count + extra > capacity { grow(to: count + extra) }
    }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        if count + bytes.count > capacity { grow(to: count + bytes.count) }
        (base.unsafelyUnwrapped + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    mutating func append(_ text: StaticString) {
        append(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// The decimal digits of `value`.
    mutating func append(decimal value: Int) {
        DecimalText.withDigits(value) { append(UnsafeRawBufferPointer($0)) }
    }

    /// The bytes not yet sent (empty when there are none).
    func withUnsent<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: base.map { $0 + sent }, count: count - sent))
    }

    /// `n` more bytes went out. Once all have, writing starts again at the front.
    mutating func markSent(_ n: Int) {
        precondition(n >= 0 && n <= count - sent, "more bytes sent than were pending")
        sent += n
        guard sent == count else { return }
        sent = 0
        count = 0
        if capacity > Self.keptCapacity {
            base?.deallocate()
            base = nil
            capacity = 0
        }
    }

    /// Storage for at least `needed` bytes, the written ones kept. Doubling keeps a long
    /// body's many appends linear.
    private mutating func grow(to needed: Int) {
        let newCapacity = max(needed, capacity * 2, 512)
        let storage = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        if let base {
            storage.copyMemory(from: base, byteCount: count)
            base.deallocate()
        }
        base = storage
        capacity = newCapacity
    }
}
