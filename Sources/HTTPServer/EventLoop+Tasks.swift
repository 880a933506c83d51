import HTTPCore
import LoopGuests
#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// The loop's side of async work: the Tasks its handlers start (the loop is their
/// executor), the responses they finish, and the inbox both come through.
extension EventLoop {
    /// Hands a finished async response to the loop that owns its connection.
    func post(token: UInt64, sequence: Int, response: HTTPResponse) {
        inbox.post(.init(token: token, sequence: sequence, response: response))
    }

    func dispatch(_ request: HTTPRequest, on connection: Connection) {
        let keepAlive = request.keepAlive && !draining && !connection.state.peerClosedWrite
        let sequence = connection.admit(.init(isHead: request.method == .head, keepAlive: keepAlive, version: request.version))
        connection.state.requestAdmitted(keepAlive: keepAlive)
        switch handler(request) {
        case .now(let response):
            connection.complete(sequence, response, date: &date)
        case .later(let work):
            connection.state.asyncStarted()
            let token = connection.token
            // On this loop: its awaits come back here, with no hop through the shared pool.
            Task(executorPreference: self) { [self] in
                let response = await LoopExecutor.$current.withValue(self) { await work() }
                post(token: token, sequence: sequence, response: response)
            }
        }
    }

    /// Runs the jobs of the loop's Tasks and files the responses they finished, looking
    /// again while more arrive (a job often posts a response at once), a bounded number of times.
    func drainInbox(woken: Bool) {
        queuedFromLoop = false
        if woken {
            var value: eventfd_t = 0
            _ = eventfd_read(wakeFD, &value)
        }
        var rounds = 0
        while let batch = inbox.take(last: rounds == 16) {
            rounds += 1
            // A stop first: responses finishing in the same batch then already say `Connection: close`.
            if batch.stopRequested, drainDeadline == nil { beginDrain() }
            for job in batch.jobs { job.runSynchronously(on: asUnownedTaskExecutor()) }
            for completion in batch.completions {
                let fd = Int32(truncatingIfNeeded: completion.token & 0xFFFF_FFFF)
                // The connection may have closed while its handler ran.
                guard let connection = connections[fd], connection.token == completion.token else {
                    completion.response.bodySent?(0)
                    continue
                }
                connection.state.asyncFinished()
                connection.complete(completion.sequence, completion.response, date: &date)
                service(connection)
            }
        }
    }
}

/// Tasks begun for async handlers run on the loop of their connection: a job is queued in
/// the inbox and run by the loop thread, so a disk read or an upstream fetch costs one
/// wake of the loop when it is done instead of hops through the shared pool as well.
/// Their work must not block, as every handler's.
extension EventLoop: TaskExecutor {
    func enqueue(_ job: consuming ExecutorJob) {
        let fromLoop = isCurrent
        inbox.enqueue(UnownedJob(job), on: asUnownedTaskExecutor(), fromLoop: fromLoop)
        if fromLoop { queuedFromLoop = true }
    }
}
