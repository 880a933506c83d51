import Locking

/// A body while it arrives: the writer appends to a spool file, and any number of readers
/// send from that file as far as it is written, each from its own position. An answer's
/// (written by its transfer) reaches its clients as the origin sends it; a request body's
/// (written by its connection's loop) reaches the origin as the client sends it. A reader
/// slower than the writer costs disk, not memory: nothing is buffered per reader.
///
/// The length is the sender's `Content-Length`, known before the first byte: a message can
/// state it at once. A chunked request body's is not known: its stream is open-ended, the
/// length only a bound, and it ends when the writer says. The writer is one thread; readers are any.
public final class BodyStream: Sendable {
    public let file: BodyFile
    public let length: Int
    /// `length` is only the most the body may be (a chunked request body's limit).
    public let isOpenEnded: Bool
    private let state = Locked(State())

    /// Why the writer ended the body short when it was the sender's doing: the status and
    /// words the sender is answered with (a request body whose framing broke, or that stalled).
    public struct Refusal: Sendable, Equatable {
        public let status: Int
        public let detail: String

        public init(status: Int, detail: String) {
            self.status = status
            self.detail = detail
        }
    }

    private struct State {
        var written = 0
        var outcome: Bool?
        var refusal: Refusal?
        /// Each woken once, when the stream reaches its offset or ends.
        var waiters: [(until: Int, wake: @Sendable () -> Void)] = []
        /// Told once, at the end, whether the body arrived whole.
        var finishers: [@Sendable (Bool) -> Void] = []
    }

    /// How far a reader may go now.
    public enum Progress: Equatable {
        /// Bytes before this offset are in the file; more may come.
        case written(Int)
        /// The whole body is in the file.
        case complete
        /// The transfer failed: the body will never be whole.
        case failed
    }

    /// Where the body begins in the file: positions (`written`, a region's `offset`) are the
    /// file's, so a reader sends from the file at the position it has reached.
    public let start: Int

    public init(file: BodyFile, length: Int, openEnded: Bool = false, start: Int = 0) {
        self.file = file
        self.length = length
        self.isOpenEnded = openEnded
        self.start = start
        state.withLock { $0.written = start }
    }

    /// The file position written up to: the end of the body once it is `.complete`.
    public var written: Int { state.withLock { $0.written } }

    /// Why the stream failed, when its writer said (`refuse`).
    public var refusal: Refusal? { state.withLock { $0.refusal } }

    public var progress: Progress {
        state.withLock { state in
            switch state.outcome {
            case true?: .complete
            case false?: .failed
            case nil: .written(state.written)
            }
        }
    }

    /// Calls `wake` once more than `position` is written, or the stream ends. False, and
    /// `wake` is not kept, when that is so already: read again instead.
    public func wait(beyond position: Int, _ wake: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            guard state.outcome == nil, state.written <= position else { return false }
            state.waiters.append((position + 1, wake))
            return true
        }
    }

    /// Calls `done` once the stream ends, with whether the body arrived whole (at once when
    /// it has ended).
    public func whenFinished(_ done: @escaping @Sendable (Bool) -> Void) {
        let outcome: Bool? = state.withLock { state in
            if state.outcome == nil { state.finishers.append(done) }
            return state.outcome
        }
        if let outcome { done(outcome) }
    }

    // MARK: The writer

    /// Appends `bytes`; false when the file refused them, they pass `length`, or the stream
    /// has ended (abandoned: nobody will read them).
    public func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let at: Int? = state.withLock { $0.outcome == nil ? $0.written : nil }
        guard let at, at - start + bytes.count <= length, file.write(bytes, at: at) else { return false }
        let due = state.withLock { state -> [@Sendable () -> Void] in
            state.written += bytes.count
            guard state.waiters.contains(where: { $0.until <= state.written }) else { return [] }
            let written = state.written
            defer { state.waiters.removeAll { $0.until <= written } }
            return state.waiters.filter { $0.until <= written }.map(\.wake)
        }
        due.forEach { $0() }
        return true
    }

    /// Nobody will read the rest (`StreamInterest`): the stream ends as failed, if it has not
    /// ended, and the writer's next `append` is refused.
    public func abandon() {
        finish(succeeded: false)
    }

    /// Ends the stream (once): whole when the writer succeeded and `length` bytes arrived
    /// (any number, for an open-ended stream).
    public func finish(succeeded: Bool) {
        end(succeeded: succeeded, refusal: nil)
    }

    /// Ends the stream short for the sender's fault, keeping why for its readers.
    public func refuse(_ refusal: Refusal) {
        end(succeeded: false, refusal: refusal)
    }

    private func end(succeeded: Bool, refusal: Refusal?) {
        let ended: (Bool, [(until: Int, wake: @Sendable () -> Void)], [@Sendable (Bool) -> Void])? = state.withLock { state in
            guard state.outcome == nil else { return nil }
            let whole = succeeded && (isOpenEnded || state.written - start == length)
            state.outcome = whole
            state.refusal = refusal
            defer {
                state.waiters = []
                state.finishers = []
            }
            return (whole, state.waiters, state.finishers)
        }
        guard let (whole, waiters, finishers) = ended else { return }
        waiters.forEach { $0.wake() }
        finishers.forEach { $0(whole) }
    }
}
