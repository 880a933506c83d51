import CCurl
import Foundation
import Synchronization

/// One libcurl multi handle and the transfers on it, whoever drives it (`CurlThread` or
/// `CurlLoopGuest`). libcurl handles are not thread-safe: every call here happens on the
/// driver's one thread.
final class CurlMulti {
    let handle: UnsafeMutableRawPointer
    /// Transfers on the handle, by id.
    private var active: [Int: Transfer] = [:]
    private let inFlight: TransferCount
    let keptConnections = KeptConnections()

    init(maxConnectionsPerHost: Int, inFlight: TransferCount) {
        handle = curl_multi_init()
        self.inFlight = inFlight
        _ = larder_multi_setopt_long(handle, CURLMOPT_MAX_HOST_CONNECTIONS, maxConnectionsPerHost)
        // Keep every connection the per-host bound allows for a few hosts, so reuse is the rule.
        _ = larder_multi_setopt_long(handle, CURLMOPT_MAXCONNECTS, max(8, maxConnectionsPerHost * 4))
    }

    func add(_ transfer: Transfer) {
        if transfer.cancelled.load(ordering: .acquiring) {
            transfer.continuation?.resume(throwing: CancellationError())
            transfer.release()
            return
        }
        transfer.requestTime = Date()
        active[transfer.id] = transfer
        inFlight.value.add(1, ordering: .relaxed)
        keptConnections.watch(transfer)
        curl_multi_add_handle(handle, transfer.easy)
    }

    func cancel(id: Int) {
        if let transfer = active[id] { finish(transfer, .failure(CancellationError())) }
    }

    /// Finishes the transfers curl reports done.
    func finishCompleted() {
        var queued: Int32 = 0
        while let message = curl_multi_info_read(handle, &queued) {
            guard larder_msg_is_done(message) != 0 else { continue }
            var context: UnsafeMutableRawPointer?
            _ = larder_easy_getinfo_pointer(larder_msg_easy(message), CURLINFO_PRIVATE, &context)
            guard let context else { continue }
            let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
            if keptConnections.sendsAgain(transfer, on: handle) { continue }
            keptConnections.keep(transfer.easy)
            finish(transfer, transfer.outcome(larder_msg_result(message)).mapError { $0 })
        }
    }

    /// What a transfer waited for happened: more of its streamed request body arrived, or the
    /// readers of its answer moved on.
    func resumeWaiting(id: Int) {
        guard let transfer = active[id] else { return }
        let code = transfer.resumeWaiting()
        if code != CURLE_OK { finish(transfer, transfer.outcome(code).mapError { $0 }) }
    }

    /// Whether a streaming transfer paused for the rest of the turn (`Transfer.bytesPerTurn`).
    var hasPaused: Bool { active.values.contains { $0.paused } }

    /// Resumes the paused transfers (each may take in its next turn's share at once).
    func resumePaused() {
        for transfer in active.values where transfer.paused { transfer.resume() }
        finishCompleted()
    }

    /// Fails every transfer with `UpstreamError.shutDown` and frees the handle; the last call.
    func close() {
        for transfer in Array(active.values) { finish(transfer, .failure(UpstreamError.shutDown)) }
        curl_multi_cleanup(handle)
    }

    /// Takes the transfer off the multi handle (closing its connection if it was mid-flight),
    /// resumes its caller exactly once and frees it.
    private func finish(_ transfer: Transfer, _ result: Result<UpstreamResponse, any Error>) {
        guard active.removeValue(forKey: transfer.id) != nil else { return }
        inFlight.value.subtract(1, ordering: .relaxed)
        curl_multi_remove_handle(handle, transfer.easy)
        transfer.continuation?.resume(with: result)
        transfer.continuation = nil
        if case .success = result { transfer.ended(succeeded: true) } else { transfer.ended(succeeded: false) }
        transfer.release()
    }
}

/// Transfers in flight across every driver of one client.
final class TransferCount: Sendable {
    let value = Atomic<Int>(0)
}
