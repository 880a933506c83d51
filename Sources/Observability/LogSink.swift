import Logging
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import Locking

/// Standard output for every log line of the process, written in batches by a thread of
/// its own: a line is appended to a buffer under a short lock (a copy of its bytes), and
/// the writer wakes at most once per `batchInterval` to write everything gathered with one
/// `write`. An event loop never makes a system call for a log line, and a busy server
/// writes hundreds of lines per call. Lines keep the order they were appended in.
///
/// When standard output stops taking bytes (a stalled pipe), the buffer stops at
/// `maxBuffered` (8 MiB): later lines are dropped and counted, and one line saying how many is
/// written once output moves again, rather than the server waiting on its logs.
final class LogSink: Sendable {
    static let shared = LogSink(fd: 1)

    static let batchInterval: Duration = .milliseconds(5)

    private struct State {
        var buffer: [UInt8] = []
        /// The last batch written, emptied with its capacity kept, to become the next buffer:
        /// a busy server's buffer then never regrows from nothing (copying under the lock,
        /// while both loops wait to append) after every write.
        var spare: [UInt8] = []
        var dropped = 0
        var writerWaiting = false
        var started = false
        /// The writer ends once the buffer is written (`stop`).
        var stopping = false
    }

    private let fd: Int32
    /// Bytes waiting at most; lines beyond are dropped and counted.
    let maxBuffered: Int
    /// The format of the line that reports dropped lines.
    private let json = Atomic<Bool>(false)
    private let state = Locked(State())
    private let wake = DispatchSemaphore(value: 0)
    /// Serialises writers: the batch thread and `flush`.
    private let writing = Locked(())
    private let writerExit = ThreadExit()

    init(fd: Int32, maxBuffered: Int = 8 << 20) {
        self.fd = fd
        self.maxBuffered = maxBuffered
    }

    func configure(json: Bool) {
        self.json.store(json, ordering: .relaxed)
    }

    /// Queues one line (newline included).
    func append(_ line: [UInt8]) {
        line.withUnsafeBytes { append($0) }
    }

    /// Queues one line (newline included), copied from where it was written.
    func append(_ line: UnsafeRawBufferPointer) {
        let signal = state.withLock { state -> Bool in
            if !state.started {
                state.started = true
                startWriter()
            }
            guard state.buffer.count + line.count <= maxBuffered else {
                state.dropped += 1
                return false
            }
            state.buffer.append(contentsOf: line)
            defer { state.writerWaiting = false }
            return state.writerWaiting
        }
        if signal { wake.signal() }
    }

    /// Writes everything queued, now, on the caller's thread (at exit, and after a
    /// start-up failure, so no line is lost).
    func flush() {
        writing.withLock { _ in writeBatch() }
    }

    /// Writes what is queued and ends the writer thread, returning once it has ended (at once
    /// when no line was ever written), or after a second when output is stalled. A line
    /// appended later is written at exit (`flush`).
    func stop() async {
        let started = state.withLock { state in
            state.stopping = true
            return state.started
        }
        guard started else { return }
        wake.signal()
        // A write to a pipe nobody reads never returns: the stop goes on without it.
        _ = await writerExit.wait(atMost: .seconds(1))
    }

    private func startWriter() {
        let thread = Thread { [self] in
            while true {
                let (idle, ends) = state.withLock { state -> (Bool, Bool) in
                    guard state.buffer.isEmpty && state.dropped == 0 else { return (false, false) }
                    state.writerWaiting = !state.stopping
                    return (!state.stopping, state.stopping)
                }
                if ends { break }
                if idle { wake.wait() }
                // Let the lines of the next few milliseconds gather into this write.
                usleep(UInt32(Self.batchInterval.components.attoseconds / 1_000_000_000_000))
                writing.withLock { _ in writeBatch() }
            }
            writerExit.exited()
        }
        thread.name = "larder-log"
        thread.start()
    }

    /// The largest spare buffer kept: after a stall the buffer may have grown to `maxBuffered`.
    static let maxSpare = 1 << 20

    private func writeBatch() {
        var (batch, dropped) = state.withLock { state in
            var batch: [UInt8] = []
            swap(&batch, &state.buffer)
            swap(&state.buffer, &state.spare)
            defer { state.dropped = 0 }
            return (batch, state.dropped)
        }
        defer {
            batch.removeAll(keepingCapacity: batch.capacity <= Self.maxSpare)
            state.withLock { [batch] state in state.spare = batch }
        }
        if dropped > 0 {
            var line = LogLine(json: json.load(ordering: .relaxed), level: .warning, label: "larder",
                               message: "log output fell behind: \(dropped) lines dropped")
            batch += line.finish()
        }
        batch.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if n <= 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += n
            }
        }
    }
}
