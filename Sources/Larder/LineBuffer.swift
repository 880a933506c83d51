import HTTPCore

/// The bytes of one log line while it is written: a buffer the line alone owns, that grows
/// when a long field needs it.
///
/// An access line is some twenty appends of a few bytes each. `Array.append(contentsOf:)`
/// checks that its storage is not shared and goes through `Sequence` on every one, which
/// cost more than the copies; here an append is a capacity check and a copy. It cannot be
/// copied (`~Copyable`), so no two owners ever free or write the same storage.
struct LineBuffer: ~Copyable, ByteSink {
    private var base: UnsafeMutableRawPointer
    private var capacity: Int
    private(set) var count = 0

    init(capacity: Int) {
        self.capacity = max(16, capacity)
        base = .allocate(byteCount: self.capacity, alignment: 1)
    }

    deinit { base.deallocate() }

    mutating func append(_ byte: UInt8) {
        if count == capacity { grow(toHold: 1) }
        base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        if capacity - count < bytes.count { grow(toHold: bytes.count) }
        (base + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        append(UnsafeRawBufferPointer(bytes))
    }

    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// What has been written so far.
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    var array: [UInt8] { withBytes { Array($0) } }

    private mutating func grow(toHold extra: Int) {
        let (needed, overflow) = count.addingReportingOverflow(extra)
        precondition(!overflow, "log line too long")
        var newCapacity = capacity
        while newCapacity < needed { newCapacity = newCapacity > Int.max / 2 ? needed : newCapacity * 2 }
        let grown = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 1)
        grown.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = grown
        capacity = newCapacity
    }
}
