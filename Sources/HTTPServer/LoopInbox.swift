import CLinux
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization

/// The one door into an event loop from other threads: finished async responses, the jobs
/// of Tasks that run on the loop (it is their task executor), and a stop request, queued
/// under a short lock. Whoever makes it non-empty wakes the loop through its eventfd,
/// unless the loop is draining it at that moment and will look again before it stops, or
/// is the loop itself, which drains it before it next sleeps.
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

    private let state = Mutex(State())
    private let wakeFD: Int32

    init(wakeFD: Int32) { self.wakeFD = wakeFD }

    func post(_ completion: Completion) {
        let wake = state.withLock { state in
            defer { state.batch.completions.append(completion) }
            return state.batch.isEmpty && !state.draining
        }
        if wake { _ = eventfd_write(wakeFD, 1) }
    }

    /// `fromLoop`: the loop itself queues the job and drains the inbox before it next
    /// sleeps, so no wake is written (a continuation its own I/O resumed).
    func enqueue(_ job: UnownedJob, on executor: UnownedTaskExecutor, fromLoop: Bool = false) {
        let wake: Bool? = state.withLock { state in
            guard !state.closed else { return nil }
            defer { state.batch.jobs.append(job) }
            return state.batch.isEmpty && !state.draining && !fromLoop
        }
        switch wake {
        case nil: Self.runElsewhere([job], executor)
        case true?: _ = eventfd_write(wakeFD, 1)
        case false?: break
        }
    }

    func requestStop() {
        state.withLock { $0.batch.stopRequested = true }
        _ = eventfd_write(wakeFD, 1)
    }

    /// Takes everything queued and marks the inbox as being drained; nil, and the drain
    /// over, once nothing is left. `last` ends the drain even so (the loop has other work):
    /// then the loop is woken to come back.
    func take(last: Bool = false) -> Batch? {
        let (batch, wake): (Batch?, Bool) = state.withLock { state in
            if state.batch.isEmpty && !state.batch.stopRequested || last {
                state.draining = false
                return (nil, !state.batch.isEmpty || state.batch.stopRequested)
            }
            state.draining = true
            defer { state.batch = Batch() }
            return (state.batch, false)
        }
        if wake { _ = eventfd_write(wakeFD, 1) }
        return batch
    }

    /// The loop has ended: jobs queued or still to come run on dispatch threads, so no
    /// Task that began on the loop is left suspended forever.
    func close(executor: UnownedTaskExecutor) {
        let jobs = state.withLock { state in
            state.closed = true
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
