import Synchronization
import CCurl
import HTTPCore
import LoopGuests

/// A `CurlMulti` driven by an event loop (`LoopReactor`): curl's sockets are watched in the
/// loop's epoll and its timer is the loop's. A fetch made by one of the loop's Tasks then
/// starts and finishes on the loop thread: no thread is woken to send the request, and
/// the answer wakes only the loop, which resumes the Task at once.
///
/// Everything but `cancel` and `stop` runs on the loop's thread; those two hop there.
final class CurlLoopGuest: LoopGuest, @unchecked Sendable {
    private let multi: CurlMulti
    private let key: ObjectIdentifier
    private let loop: any LoopReactor
    /// The loop ended or the client shut down: the handle is freed.
    private var ended = false
    /// Paused streams are to be resumed once the loop has served everything else this turn.
    private var resumeQueued = false

    init(loop: any LoopReactor, key: ObjectIdentifier, maxConnectionsPerHost: Int, inFlight: TransferCount) {
        self.loop = loop
        self.key = key
        multi = CurlMulti(maxConnectionsPerHost: maxConnectionsPerHost, inFlight: inFlight)
        let context = Unmanaged.passUnretained(self).toOpaque()
        _ = larder_multi_setopt_socket_callback(multi.handle) { _, socket, what, context, _ in
            Unmanaged<CurlLoopGuest>.fromOpaque(context!).takeUnretainedValue().watch(socket, what)
            return 0
        }
        _ = larder_multi_setopt_pointer(multi.handle, CURLMOPT_SOCKETDATA, context)
        _ = larder_multi_setopt_timer_callback(multi.handle) { _, milliseconds, context in
            Unmanaged<CurlLoopGuest>.fromOpaque(context!).takeUnretainedValue().setTimer(milliseconds)
            return 0
        }
        _ = larder_multi_setopt_pointer(multi.handle, CURLMOPT_TIMERDATA, context)
    }

    /// Starts the transfer; on the loop's thread. Returns false when the guest has ended.
    func submit(_ transfer: Transfer) -> Bool {
        guard !ended, loop.isCurrent else { return false }
        let id = transfer.id
        transfer.wake = { [weak self] in
            guard let self else { return }
            Task(executorPreference: loop) { [self] in
                guard loop.isCurrent, !ended else { return }
                multi.resumeWaiting(id: id)
            }
        }
        // curl asks for a timer of 0 ms to start it: the loop calls back before it next sleeps.
        multi.add(transfer)
        return true
    }

    /// From any thread: the transfer is taken off on the loop, if it still runs.
    func cancel(_ transfer: Transfer) {
        transfer.cancelled.store(true, ordering: .releasing)
        let id = transfer.id
        // Run elsewhere (the loop has ended), the job finds the guest ended and does nothing.
        Task(executorPreference: loop) { [self] in
            guard loop.isCurrent, !ended else { return }
            multi.cancel(id: id)
        }
    }

    /// From any thread: fails what is in flight and frees the handle, on the loop.
    func stop() async {
        await Task(executorPreference: loop) { [self] in
            guard loop.isCurrent else { return }
            end()
        }.value
    }

    // MARK: LoopGuest

    func ready(_ fd: Int32, readable: Bool, writable: Bool, failed: Bool) {
        guard !ended else { return }
        let mask = (readable ? CURL_CSELECT_IN : 0) | (writable ? CURL_CSELECT_OUT : 0) | (failed ? CURL_CSELECT_ERR : 0)
        var running: Int32 = 0
        curl_multi_socket_action(multi.handle, fd, Int32(mask), &running)
        multi.finishCompleted()
        resumeAfterTurn()
    }

    func timerFired() {
        guard !ended else { return }
        var running: Int32 = 0
        curl_multi_socket_action(multi.handle, CURL_SOCKET_TIMEOUT, 0, &running)
        multi.finishCompleted()
        resumeAfterTurn()
    }

    /// A stream that took in its share of this turn goes on after the loop has served its
    /// connections (the answer's own head among them); resuming sets libcurl's timer, which
    /// brings the next turn's share.
    private func resumeAfterTurn() {
        guard !resumeQueued, multi.hasPaused else { return }
        resumeQueued = true
        loop.afterTurn { [self] in
            resumeQueued = false
            guard !ended else { return }
            multi.resumePaused()
        }
    }

    func loopEnded() { end() }

    // MARK: curl's callbacks

    private func watch(_ socket: curl_socket_t, _ what: Int32) {
        let what = Int(what)
        loop.watch(socket, readable: what == CURL_POLL_IN || what == CURL_POLL_INOUT,
                    writable: what == CURL_POLL_OUT || what == CURL_POLL_INOUT, for: key)
    }

    private func setTimer(_ milliseconds: Int) {
        loop.setTimer(milliseconds: milliseconds < 0 ? nil : milliseconds, for: key)
    }

    private func end() {
        guard !ended else { return }
        multi.close()
        ended = true
        loop.setTimer(milliseconds: nil, for: key)
    }
}
