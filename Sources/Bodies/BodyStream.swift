import Synchronization
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
        /// Read at its readers' pace (`pace`): where each reader is, by cursor, and the file
        /// position below which the body has been freed (`BodyFile.release`).
        var paced = false
        var cursors: [ObjectIdentifier: Int] = [:]
        var released = 0
        /// The writer, waiting for the slowest reader (`mayWrite`).
        var writerWake: (@Sendable () -> Void)?
        var pacingHooks: [@Sendable () -> Void] = []

        /// Where the slowest reader is; with none yet, the first byte not freed.
        var slowest: Int { cursors.values.min() ?? released }

        /// The waiting writer's wake, once readers are a release step short of holding it back.
        mutating func writerMayGoOn() -> (@Sendable () -> Void)? {
            guard writerWake != nil, written + SpoolRoom.step <= slowest + BodyStream.pacedWindow else { return nil }
            defer { writerWake = nil }
            return writerWake
        }
    }

    /// How far a body read at its readers' pace is written ahead of the slowest of them: what
    /// such a body holds on disk, with up to one `SpoolRoom.step` not yet freed behind them.
    public static let pacedWindow = 4 << 20

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
        state.withLock {
            $0.written = start
            $0.released = start
        }
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

    // MARK: Pace

    /// Whether the body is read at its readers' pace: never whole in its file, so never stored.
    public var isPaced: Bool { state.withLock { $0.paced } }

    /// From now on the writer keeps at most `pacedWindow` ahead of the slowest reader, and
    /// what every reader has passed is freed from the file (as nginx reads an upstream at its
    /// client's pace past `proxy_max_temp_file_size`). A reader starting behind what was freed
    /// is refused (`StreamCursor.isRefused`).
    public func pace() {
        let hooks = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.paced else { return [] }
            state.paced = true
            defer { state.pacingHooks = [] }
            return state.pacingHooks
        }
        hooks.forEach { $0() }
    }

    /// Calls `hook` once the body is read at its readers' pace (at once when it is).
    public func whenPaced(_ hook: @escaping @Sendable () -> Void) {
        let now = state.withLock { state in
            if !state.paced { state.pacingHooks.append(hook) }
            return state.paced
        }
        if now { hook() }
    }

    /// A reader from file position `position` on; it says how far it has sent (`advance`)
    /// until it lets go.
    public func track(from position: Int) -> StreamCursor {
        let cursor = StreamCursor(self)
        let refused = state.withLock { state in
            guard position >= state.released else { return true }
            state.cursors[ObjectIdentifier(cursor)] = position
            return false
        }
        cursor.isRefused = refused
        return cursor
    }

    fileprivate func move(_ cursor: ObjectIdentifier, to position: Int?) {
        let wake = state.withLock { state -> (@Sendable () -> Void)? in
            guard state.cursors[cursor] != nil else { return nil }
            state.cursors[cursor] = position
            return state.writerMayGoOn()
        }
        wake?()
    }

    /// The writer's question before it appends `count` bytes: true when it may. Paced and
    /// that far ahead of the slowest reader, false: `wake` is called once readers have moved
    /// on, or the stream ended. Frees, whole steps at a time, what every reader has passed.
    public func mayWrite(_ count: Int, wake: @escaping @Sendable () -> Void) -> Bool {
        let (allowed, freed) = state.withLock { state -> (Bool, Range<Int>?) in
            guard state.paced, state.outcome == nil else { return (true, nil) }
            var freed: Range<Int>?
            let upTo = state.slowest / SpoolRoom.step * SpoolRoom.step
            if upTo > state.released {
                freed = state.released..<upTo
                state.released = upTo
            }
            guard state.written + count > state.slowest + Self.pacedWindow else { return (true, freed) }
            state.writerWake = wake
            return (false, freed)
        }
        if let freed { _ = file.release(freed.lowerBound, count: freed.count) }
        return allowed
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
        let ended: (Bool, [(until: Int, wake: @Sendable () -> Void)], [@Sendable (Bool) -> Void], (@Sendable () -> Void)?)? = state.withLock { state in
            guard state.outcome == nil else { return nil }
            let whole = succeeded && (isOpenEnded || state.written - start == length)
            state.outcome = whole
            state.refusal = refusal
            defer {
                state.waiters = []
                state.finishers = []
                state.writerWake = nil
                state.pacingHooks = []
            }
            return (whole, state.waiters, state.finishers, state.writerWake)
        }
        guard let (whole, waiters, finishers, writer) = ended else { return }
        waiters.forEach { $0.wake() }
        finishers.forEach { $0(whole) }
        writer?()
    }
}

/// One reader's place in a body read at its readers' pace (`BodyStream.pace`): held while it
/// sends the body, let go when it is done or gone.
public final class StreamCursor: @unchecked Sendable {
    private let stream: BodyStream
    /// Started behind what the stream had freed: this reader can never have its bytes.
    /// Set once, before the cursor is handed out.
    public fileprivate(set) var isRefused = false

    fileprivate init(_ stream: BodyStream) {
        self.stream = stream
    }

    /// The reader has sent up to file position `position`.
    public func advance(to position: Int) {
        stream.move(ObjectIdentifier(self), to: position)
    }

    deinit { stream.move(ObjectIdentifier(self), to: nil) }
}
