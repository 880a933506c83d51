import HTTPCore

/// Bytes rendered for a connection and not yet sent: responses are written at its end in
/// request order (`bytes`, a `ByteBuffer`: a response is a dozen small pieces), and sent
/// from its front.
struct OutputBuffer: ~Copyable {
    var bytes = ByteBuffer(capacity: 512)
    /// Bytes from the front already sent.
    private(set) var sent = 0

    /// Storage beyond this is given back once everything in it is sent.
    static let keptCapacity = 256 * 1024

    /// Bytes written and not yet sent.
    var pending: Int { bytes.count - sent }

    /// The bytes not yet sent (empty when there are none).
    func withUnsent<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try bytes.withBytes(from: sent, body)
    }

    /// `n` more bytes went out. Once all have, writing starts again at the front.
    mutating func markSent(_ n: Int) {
        precondition(n >= 0 && n <= pending, "more bytes sent than were pending")
        sent += n
        guard sent == bytes.count else { return }
        sent = 0
        bytes.removeAll(keepingCapacity: bytes.capacity <= Self.keptCapacity)
    }
}
