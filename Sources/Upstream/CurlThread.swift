import CCurl
import Foundation
import Synchronization
import Locking

/// A `CurlMulti` driven by a thread of its own, for fetches made off any event loop.
///
/// Other threads only queue commands and call `curl_multi_wakeup`, the one multi call
/// libcurl allows from anywhere; every other curl call happens on this thread.
final class CurlThread: @unchecked Sendable {
    private enum Command {
        case add(Transfer)
        case cancel(id: Int)
        case resumeWaiting(id: Int)
    }

    private let multi: CurlMulti
    private let commands = Locked<(queue: [Command], stopping: Bool)>(([], false))
    private let alive = Atomic<Bool>(false)
    private let stopped = Locked<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    init(maxConnectionsPerHost: Int, inFlight: TransferCount) {
        multi = CurlMulti(maxConnectionsPerHost: maxConnectionsPerHost, inFlight: inFlight)
        alive.store(true, ordering: .releasing)
        let thread = Thread { [self] in run() }
        thread.name = "larder-curl"
        thread.start()
    }

    var isAlive: Bool { alive.load(ordering: .acquiring) }

    func submit(_ transfer: Transfer) {
        let id = transfer.id
        transfer.wake = { [weak self] in
            guard let self else { return }
            commands.withLock { $0.queue.append(.resumeWaiting(id: id)) }
            curl_multi_wakeup(multi.handle)
        }
        let accepted = commands.withLock { state in
            guard !state.stopping else { return false }
            state.queue.append(.add(transfer))
            return true
        }
        guard accepted else {
            transfer.continuation?.resume(throwing: UpstreamError.shutDown)
            transfer.release()
            return
        }
        curl_multi_wakeup(multi.handle)
    }

    func cancel(_ transfer: Transfer) {
        transfer.cancelled.store(true, ordering: .releasing)
        commands.withLock { $0.queue.append(.cancel(id: transfer.id)) }
        curl_multi_wakeup(multi.handle)
    }

    /// Fails every transfer still running with `UpstreamError.shutDown` and ends the thread.
    func stop() async {
        commands.withLock { $0.stopping = true }
        curl_multi_wakeup(multi.handle)
        await withCheckedContinuation { continuation in
            let done = stopped.withLock { state in
                if state.done { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    private func run() {
        var running: Int32 = 0
        while true {
            let (batch, stopping) = commands.withLock { state in
                defer { state.queue.removeAll(keepingCapacity: true) }
                return (state.queue, state.stopping)
            }
            for command in batch {
                switch command {
                case .add(let transfer): multi.add(transfer)
                case .cancel(let id): multi.cancel(id: id)
                case .resumeWaiting(let id): multi.resumeWaiting(id: id)
                }
            }
            if stopping { break }
            curl_multi_perform(multi.handle, &running)
            multi.finishCompleted()
            // No loop to share with here: a paused stream goes on at once.
            if multi.hasPaused { multi.resumePaused() }
            // Sleeps until a socket is ready, a curl timer is due, or curl_multi_wakeup.
            curl_multi_poll(multi.handle, nil, 0, 1000, nil)
        }
        multi.close()
        alive.store(false, ordering: .releasing)
        let waiters = stopped.withLock { state in
            state.done = true
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }
}
