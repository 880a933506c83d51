import Dispatch
import Synchronization
import Locking

/// The disk tier's writes, removals and purges, run one at a time on a queue in the order
/// they were asked for. A write begun on an event loop is handed to the queue only after
/// the loop's turn (`start`), so the writer thread is not woken ahead of the answer; but
/// it takes its place in line when it is asked for, so a removal asked for later can never
/// run before it and leave the removed entry on disk.
final class OrderedWork: Sendable {
    private struct State {
        var waiting: [@Sendable () -> Void] = []
        /// A drain is queued or running: it takes whatever is added before it ends.
        var draining = false
    }

    private let queue: DispatchQueue
    private let state = Locked(State())

    init(label: String) {
        queue = DispatchQueue(label: label, qos: .utility)
    }

    /// Puts `work` in line; with `start`, hands the line to the queue now.
    func add(start: Bool, _ work: @escaping @Sendable () -> Void) {
        let begin = state.withLock { state in
            state.waiting.append(work)
            return start && Self.claim(&state)
        }
        if begin { queue.async(execute: drain) }
    }

    /// Hands what waits in line to the queue.
    func start() {
        if state.withLock({ Self.claim(&$0) }) { queue.async(execute: drain) }
    }

    private static func claim(_ state: inout State) -> Bool {
        guard !state.draining, !state.waiting.isEmpty else { return false }
        state.draining = true
        return true
    }

    private func drain() {
        while true {
            let batch = state.withLock { state in
                defer { state.waiting = [] }
                if state.waiting.isEmpty { state.draining = false }
                return state.waiting
            }
            guard !batch.isEmpty else { return }
            for work in batch { work() }
        }
    }
}
