public import Foundation
import HTTPCore
import Synchronization
import Upstream
import Locking

/// Stops requests to one upstream while it has asked for a pause (429 or 503 with
/// `Retry-After`) or keeps failing (429 or 503 without it, or connection failures and
/// timeouts in a row), so callers get a stale answer or a 503 at once instead of adding load
/// to an upstream that is refusing or down. When the pause is over, one probe at a time goes
/// through: its success reopens the upstream, its failure starts a pause twice as long (up
/// to a ceiling). Times are read from the cache's clock, so tests move it instead of sleeping.
/// A pass-through origin is paused only when it cannot be reached: what it sends back,
/// even a broken reply, concerns one resource, and a suite of such answers on purpose
/// must not close the origin for every other request.
public final class UpstreamBackoff: Sendable {
    public struct Rules: Sendable, Equatable {
        /// The first pause when the upstream names none (`--upstream-backoff`), doubled while
        /// failures continue.
        var pause: TimeInterval = 5
        var longestPause: TimeInterval = 60
        /// Connection failures or timeouts in a row that start a pause.
        var failuresInARow = 5
        /// The longest `Retry-After` honoured, so a mistaken far-off date cannot close an
        /// upstream until the next restart.
        var longestRetryAfter: TimeInterval = 3600

        public init(pause: TimeInterval = 5, longestPause: TimeInterval = 60, longestRetryAfter: TimeInterval = 3600) {
            self.pause = pause
            self.longestPause = longestPause
            self.longestRetryAfter = longestRetryAfter
        }
        /// Whether what the upstream sent back (429 or 503, a reply cut off or not HTTP) can
        /// start a pause. A pass-through origin's answer is about one resource and goes back
        /// to the client (its status with the origin's own `Retry-After`), so there only an
        /// origin that cannot be reached is paused.
        public var pausesOnAnswers = true
    }

    /// Whether a request may go to the upstream now.
    enum Admission: Equatable {
        /// Send it; a probe's outcome decides whether the pause ends.
        case send(probe: Bool)
        /// Do not; the upstream reopens in this many seconds (at least 1), for `Retry-After`.
        case refused(retryAfter: Int)
    }

    /// What one exchange showed about the upstream.
    enum Outcome: Equatable {
        case answered(status: Int, retryAfter: String?)
        /// A reply began but broke: the connection closed before a whole response, or what
        /// came was not HTTP or was too large. The upstream was reached.
        case brokenAnswer
        /// No answer: no connection could be made, or the request timed out.
        case noAnswer

        /// What a failed exchange showed: a broken answer when the upstream was reached.
        init(failure error: any Error) {
            switch error as? UpstreamError {
            case .connectionLost?, .protocolError?, .bodyTooLarge?: self = .brokenAnswer
            default: self = .noAnswer
            }
        }
    }

    /// A change worth one log line and a counter.
    public enum Change: Equatable {
        case paused(until: Date, reason: String)
        case reopened
    }

    private struct State {
        var failuresInARow = 0
        /// When requests may go again (one probe first); nil while the upstream is open.
        var pausedUntil: Date?
        var reason = ""
        /// The pause taken the next time the upstream names none.
        var nextPause: TimeInterval
        var probing = false
    }

    let rules: Rules
    private let state: Locked<State>

    public init(rules: Rules) {
        self.rules = rules
        state = Locked(State(nextPause: rules.pause))
    }

    func admit(now: Date) -> Admission {
        state.withLock { state in
            guard let until = state.pausedUntil else { return .send(probe: false) }
            if now < until { return .refused(retryAfter: Self.seconds(from: now, to: until)) }
            if state.probing { return .refused(retryAfter: 1) }
            state.probing = true
            return .send(probe: true)
        }
    }

    /// Records a sent request's outcome; nil for one that says nothing about the upstream
    /// (it never left Larder), which only frees the probe slot.
    func record(_ outcome: Outcome?, probe: Bool, now: Date) -> Change? {
        state.withLock { state in
            if probe { state.probing = false }
            switch outcome {
            case nil:
                return nil
            case .answered(let status, let retryAfter) where pauses(onStatus: status):
                let named = retryAfter.flatMap { Self.retryAfter($0, now: now) }.map { min($0, rules.longestRetryAfter) }
                let reason = "answered \(status) " + (named == nil ? "without Retry-After" : "with Retry-After")
                return pause(&state, for: named, reason: reason, probe: probe, now: now)
            case .brokenAnswer where rules.pausesOnAnswers, .noAnswer:
                state.failuresInARow += 1
                guard probe || state.failuresInARow >= rules.failuresInARow else { return nil }
                let reason = probe ? "the probe request got no answer" : "\(rules.failuresInARow) requests in a row got no answer"
                return pause(&state, for: nil, reason: reason, probe: probe, now: now)
            case .answered, .brokenAnswer:
                // A broken reply still shows the upstream was reached, where answers cannot pause.
                state.failuresInARow = 0
                // A success sent before a pause began does not end it; only the probe does.
                guard state.pausedUntil != nil, probe else { return nil }
                state.pausedUntil = nil
                state.nextPause = rules.pause
                return .reopened
            }
        }
    }

    /// Starts a pause. Requests still in flight when it began report too: they must not
    /// start, log or double it again; a later `Retry-After` among them may only lengthen it.
    private func pause(_ state: inout State, for named: TimeInterval?, reason: String, probe: Bool, now: Date) -> Change? {
        state.failuresInARow = 0
        if let running = state.pausedUntil, !probe {
            if let named { state.pausedUntil = max(running, now.addingTimeInterval(named)) }
            return nil
        }
        let until = now.addingTimeInterval(named ?? state.nextPause)
        if named == nil { state.nextPause = min(rules.longestPause, state.nextPause * 2) }
        state.pausedUntil = until
        state.reason = reason
        return .paused(until: until, reason: reason)
    }

    /// Whether an answer with this status starts a pause (429 and 503, where the rules say so).
    func pauses(onStatus status: Int) -> Bool {
        rules.pausesOnAnswers && (status == 429 || status == 503)
    }

    /// The running pause, for readiness: when it ends and why it began.
    public func pause(now: Date) -> (until: Date, reason: String)? {
        state.withLock { state in state.pausedUntil.map { ($0, state.reason) } }
    }

    /// RFC 9110 §10.2.3: a delay in seconds, or an HTTP date; nil when it is neither.
    static func retryAfter(_ value: String, now: Date) -> TimeInterval? {
        let text = value.trimmingOWS()
        if !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            return TimeInterval(text)  // a very long number is a very long delay, capped by the caller
        }
        return HTTPDateParser.parse(String(text)).map { max(0, $0.timeIntervalSince(now)) }
    }

    /// Whole seconds from `now` to `until`, rounded up, at least 1.
    static func seconds(from now: Date, to until: Date) -> Int {
        Int(min(max(1, until.timeIntervalSince(now).rounded(.up)), 86_400))
    }
}
