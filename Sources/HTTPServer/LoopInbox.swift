import CLinux
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization
import Locking

/// The one door into an event loop from other threads: finished async responses, the jobs
/// of Tasks that run on the loop (it is their task executor), and a stop request, queued
/// under a short lock. Whoever makes it non-empty wakes the loop through its eventfd,
/// unless the loop is draining it at that moment and will look again before it stops, or
/// is the loop itself, which drains it before it next sleeps.
///
/// The inbox owns the eventfd from the loop's end on: `close` closes it under the lock, and
/// every wake is written under the lock while it is open. A wake that comes later (a
/// handler finishing after its loop, a second stop) then writes nothing, rather than eight
/// bytes into whatever the process opened next under the same number.
final class LoopInbox: Sendable {
    struct Completion {
        let token: UInt64
        let sequence: Int
        let response: HTTPResponse
    }

    /// What one look at the inbox takes.
    struct Batch {
        var completions: [Completion] = []
        var jobs: [UnownedJob] = []
        var stopRequested = false
        var isEmpty: Bool { completions.isEmpty && jobs.isEmpty }
    }

    private struct State {
        var batch = Batch()
        var draining = false
        /// The loop has ended: jobs still arriving run on a dispatch thread instead.
        var closed = false
    }

    private let state = Locked(State())
    private let wakeFD: Int32

    init(wakeFD: Int32) { self.wakeFD = wakeFD }

    /// A response finished after the loop ended is dropped: its connection is gone.
    func post(_ completion: Completion) {
        state.withLock { state in
            guard !state.closed else { return }
            if state.batch.isEmpty && !state.draining { wake() }
            state.batch.completions.append(completion)
        }
    }

    /// `fromLoop`: the loop itself queues the job and drains the inbox before it next
    /// sleeps, so no wake is written (a continuation its own I/O resumed).
    func enqueue(_ job: UnownedJob, on executor: UnownedTaskExecutor, fromLoop: Bool = false) {
        let queued = state.withLock { state in
            guard !state.closed else { return false }
            if state.batch.isEmpty && !state.draining && !fromLoop { wake() }
            state.batch.jobs.append(job)
            return true
        }
        if !queued { Self.runElsewhere([job], executor) }
    }

    func requestStop() {
        state.withLock { state in
            guard !state.closed else { return }
            state.batch.stopRequested = true
            wake()
        }
    }

    /// Under the lock, so `close` cannot close the eventfd between the check and the write.
    private func wake() { _ = eventfd_write(wakeFD, 1) }

    /// Takes everything queued and marks the inbox as being drained; nil, and the drain
    /// over, once nothing is left. `last` ends the drain even so (the loop has other work):
    /// then the loop is woken to come back.
    func take(last: Bool = false) -> Batch? {
        state.withLock { state in
            if state.batch.isEmpty && !state.batch.stopRequested || last {
                state.draining = false
                if !state.batch.isEmpty || state.batch.stopRequested { wake() }
                return nil
            }
            state.draining = true
            defer { state.batch = Batch() }
            return state.batch
        }
    }

    /// The loop has ended: the eventfd is closed, and jobs queued or still to come run on
    /// dispatch threads, so no Task that began on the loop is left suspended forever.
    func close(executor: UnownedTaskExecutor) {
        let jobs = state.withLock { state in
            state.closed = true
            System.close(wakeFD)
            defer { state.batch.jobs = [] }
            return state.batch.jobs
        }
        Self.runElsewhere(jobs, executor)
    }

    private static func runElsewhere(_ jobs: [UnownedJob], _ executor: UnownedTaskExecutor) {
        for job in jobs {
            DispatchQueue.global().async { job.runSynchronously(on: executor) }
        }
    }
}
