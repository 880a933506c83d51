import CCurl
import Foundation
import Synchronization

/// One libcurl multi handle and the one thread that drives it.
///
/// libcurl handles are not thread-safe, so every curl call on them happens on this thread.
/// Other threads only queue commands and call `curl_multi_wakeup`, the one multi call
/// libcurl allows from anywhere.
final class CurlMulti: @unchecked Sendable {
    private enum Command {
        case add(Transfer)
        case cancel(id: Int)
    }

    private let multi: UnsafeMutableRawPointer
    private let commands = Mutex<(queue: [Command], stopping: Bool)>(([], false))
    /// Transfers on the multi handle, by id (touched only on the multi thread).
    private var active: [Int: Transfer] = [:]
    private let activeCount = Atomic<Int>(0)
    private let alive = Atomic<Bool>(false)
    private let stopped = Mutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    init(maxConnectionsPerHost: Int) {
        multi = curl_multi_init()
        _ = larder_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, maxConnectionsPerHost)
        // Keep every connection the per-host bound allows for a few hosts, so reuse is the rule.
        _ = larder_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, max(8, maxConnectionsPerHost * 4))
        alive.store(true, ordering: .releasing)
        let thread = Thread { [self] in run() }
        thread.name = "larder-curl"
        thread.start()
    }

    var transfersInFlight: Int { activeCount.load(ordering: .relaxed) }
    var isAlive: Bool { alive.load(ordering: .acquiring) }

    func submit(_ transfer: Transfer) {
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
        curl_multi_wakeup(multi)
    }

    func cancel(_ transfer: Transfer) {
        transfer.cancelled.store(true, ordering: .releasing)
        commands.withLock { $0.queue.append(.cancel(id: transfer.id)) }
        curl_multi_wakeup(multi)
    }

    /// Fails every transfer still running with `UpstreamError.shutDown` and ends the thread.
    func stop() async {
        commands.withLock { $0.stopping = true }
        curl_multi_wakeup(multi)
        await withCheckedContinuation { continuation in
            let done = stopped.withLock { state in
                if state.done { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    // MARK: The multi thread

    private func run() {
        var running: Int32 = 0
        while true {
            let (batch, stopping) = commands.withLock { state in
                defer { state.queue.removeAll(keepingCapacity: true) }
                return (state.queue, state.stopping)
            }
            for command in batch {
                switch command {
                case .add(let transfer): add(transfer)
                case .cancel(let id):
                    if let transfer = active[id] { finish(transfer, .failure(CancellationError())) }
                }
            }
            if stopping { break }
            curl_multi_perform(multi, &running)
            var queued: Int32 = 0
            while let message = curl_multi_info_read(multi, &queued) {
                guard larder_msg_is_done(message) != 0 else { continue }
                var context: UnsafeMutableRawPointer?
                _ = larder_easy_getinfo_pointer(larder_msg_easy(message), CURLINFO_PRIVATE, &context)
                guard let context else { continue }
                let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
                finish(transfer, transfer.outcome(larder_msg_result(message)).mapError { $0 })
            }
            // Sleeps until a socket is ready, a curl timer is due, or curl_multi_wakeup.
            curl_multi_poll(multi, nil, 0, 1000, nil)
        }
        for transfer in Array(active.values) { finish(transfer, .failure(UpstreamError.shutDown)) }
        curl_multi_cleanup(multi)
        alive.store(false, ordering: .releasing)
        let waiters = stopped.withLock { state in
            state.done = true
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }

    private func add(_ transfer: Transfer) {
        if transfer.cancelled.load(ordering: .acquiring) {
            transfer.continuation?.resume(throwing: CancellationError())
            transfer.release()
            return
        }
        transfer.requestTime = Date()
        active[transfer.id] = transfer
        activeCount.add(1, ordering: .relaxed)
        curl_multi_add_handle(multi, transfer.easy)
    }

    /// Takes the transfer off the multi handle (closing its connection if it was mid-flight),
    /// resumes its caller exactly once and frees it.
    private func finish(_ transfer: Transfer, _ result: Result<UpstreamResponse, any Error>) {
        guard active.removeValue(forKey: transfer.id) != nil else { return }
        activeCount.subtract(1, ordering: .relaxed)
        curl_multi_remove_handle(multi, transfer.easy)
        transfer.continuation?.resume(with: result)
        transfer.continuation = nil
        transfer.release()
    }
}
