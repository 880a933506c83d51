import CCurl
import Synchronization
import Locking

/// libcurl easy handles kept between transfers. Making one (`curl_easy_init`) and freeing
/// it cost about 13,000 instructions of a miss's 320,000, both on the way to the caller;
/// `curl_easy_reset` puts a finished handle back to its defaults for far less. A handle is
/// only ever used by one transfer at a time: it is taken before it is configured and given
/// back once its transfer is off the multi handle.
final class EasyHandles: Sendable {
    private struct Handle: @unchecked Sendable { let easy: UnsafeMutableRawPointer }

    private struct State {
        var idle: [Handle] = []
        var closed = false
    }

    /// Idle handles kept at most; any more are freed.
    let limit: Int
    private let state = Locked(State())

    init(limit: Int) {
        self.limit = limit
    }

    deinit { close() }

    /// An idle handle, or a new one; nil only when libcurl cannot make one.
    func take() -> UnsafeMutableRawPointer? {
        state.withLock { $0.idle.popLast()?.easy } ?? curl_easy_init()
    }

    /// Takes back a handle whose transfer is over and off its multi handle.
    func give(_ easy: UnsafeMutableRawPointer) {
        curl_easy_reset(easy)
        let kept = state.withLock { state in
            guard !state.closed, state.idle.count < limit else { return false }
            state.idle.append(Handle(easy: easy))
            return true
        }
        if !kept { curl_easy_cleanup(easy) }
    }

    /// Frees every idle handle; a handle given back later is freed at once.
    func close() {
        let idle = state.withLock { state in
            state.closed = true
            defer { state.idle = [] }
            return state.idle
        }
        for handle in idle { curl_easy_cleanup(handle.easy) }
    }
}
