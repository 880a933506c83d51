extension Connection {
    /// A connection's rules as a plain value: which timeout applies, when to stop reading,
    /// when to linger, when to close. The event loop reports what happened (bytes read, a
    /// request parsed or queued, bytes written, a tick of its clock) and carries out the
    /// action it gets back; the rules are unit-tested with plain numbers, without sockets.
    ///
    /// Times are monotonic nanoseconds. What the connection's buffers hold comes in as a
    /// `Load`, so the buffers stay the one place those counts live.
    struct State {
        /// The limits the rules apply, from `HTTPServerConfiguration`, in nanoseconds and bytes.
        struct Limits {
            var headerRead: UInt64
            var bodyGap: UInt64
            var bodyTotal: UInt64
            var idle: UInt64
            var writeStall: UInt64
            var linger: UInt64 = 2_000_000_000
            var firstByte: UInt64 = 10_000_000_000
            var maxOutputBytes: Int
            var maxPipelinedRequests: Int

            init(headerRead: UInt64, bodyGap: UInt64, bodyTotal: UInt64, idle: UInt64, writeStall: UInt64,
                 maxOutputBytes: Int, maxPipelinedRequests: Int) {
                self.headerRead = headerRead
                self.bodyGap = bodyGap
                self.bodyTotal = bodyTotal
                self.idle = idle
                self.writeStall = writeStall
                self.maxOutputBytes = maxOutputBytes
                self.maxPipelinedRequests = maxPipelinedRequests
            }

            init(_ c: HTTPServerConfiguration) {
                self.init(headerRead: c.headerReadTimeout.nanoseconds, bodyGap: c.bodyProgressTimeout.nanoseconds,
                          bodyTotal: c.bodyReadTimeout.nanoseconds, idle: c.idleTimeout.nanoseconds,
                          writeStall: c.writeStallTimeout.nanoseconds, maxOutputBytes: c.maxOutputBytes,
                          maxPipelinedRequests: c.maxPipelinedRequests)
                firstByte = c.firstByteTimeout.nanoseconds
            }
        }

        enum Phase: Equatable {
            /// Reading and answering requests.
            case open
            /// The last response is queued; linger once it is written.
            case closing
            /// Write side shut down; reading and discarding until the peer closes or the
            /// deadline, so an unread request body does not turn the last response into a reset.
            case lingering(deadline: UInt64)
        }

        /// What the connection's buffers hold, as the rules need it.
        struct Load: Equatable {
            var responsesOwed = 0
            var pendingOutput = 0
            /// A finished response waits for the output to drain before it is rendered.
            var renderBacklog = false
            /// Some bytes of a request have been consumed and the request is not complete.
            var requestInProgress = false
            var inputBuffered = false
            /// This connection has output waiting and the server's bound on output waiting
            /// across all connections is reached (`OutputBudget`).
            var budgetSpent = false
            /// Everything before the next output is sent, and that output is a body still
            /// arriving from an upstream, none of it in yet.
            var awaitingBody = false
            /// The body of a request already dispatched is arriving (`RequestParser.streamingBody`):
            /// its answer may wait for it, and it goes to a file, so it is read whatever else waits.
            var streamingBody = false
            /// The body arriving goes to a file (streamed, or chunked past what is held): it costs
            /// disk, not memory, so only its pauses are limited, not its whole time.
            var bodyInFile = false
        }

        /// What a tick of the loop's clock asks for.
        enum TickAction: Equatable {
            case none
            /// Close at once (write stall, idle, end of linger).
            case close
            /// Answer 408 with this detail, then close.
            case timeout(String)
        }

        /// What to do once a round of reading, parsing and writing has settled.
        enum SettleAction: Equatable {
            case keep
            /// Shut the write side and read until the peer closes (or the linger ends).
            case linger
            case close
        }

        /// What a graceful stop does to the connection.
        enum DrainAction: Equatable {
            /// Idle: shut the write side (a FIN, never a reset over unread bytes).
            case linger
            /// Answers are owed: the last of them says `Connection: close`.
            case closeAfterOwed
            /// A request is half read: it is answered with `Connection: close` when it completes.
            case finishRequest
        }

        let limits: Limits
        private(set) var phase = Phase.open
        private(set) var peerClosedWrite = false
        /// Some bytes have come from the client.
        private(set) var heardFrom = false
        /// Handlers answering later that have not answered yet.
        private(set) var asyncInFlight = 0
        private var headStartedAt: UInt64?
        private var bodyStartedAt: UInt64?
        private var lastBodyProgress: UInt64
        private var lastActivity: UInt64
        private var lastWriteProgress: UInt64

        init(limits: Limits, now: UInt64) {
            self.limits = limits
            lastBodyProgress = now
            lastActivity = now
            lastWriteProgress = now
        }

        var isOpen: Bool { phase == .open }
        var isLingering: Bool { if case .lingering = phase { true } else { false } }

        // MARK: Events

        mutating func bytesRead(at now: UInt64) {
            heardFrom = true
            lastActivity = now
            lastBodyProgress = now
        }

        mutating func peerClosed() { peerClosedWrite = true }

        /// The parser has used what was buffered and waits for more: the header timer runs
        /// from the first byte of a request (blank lines included) to the end of its head;
        /// the body timers while its body is still arriving.
        mutating func parserWaiting(readingHead: Bool, readingBody: Bool, at now: UInt64) {
            if readingHead {
                if headStartedAt == nil { headStartedAt = now }
            } else {
                headStartedAt = nil
            }
            if readingBody {
                if bodyStartedAt == nil {
                    bodyStartedAt = now
                    lastBodyProgress = now
                }
            } else {
                bodyStartedAt = nil
            }
        }

        mutating func requestParsed() {
            heardFrom = true
            headStartedAt = nil
            bodyStartedAt = nil
        }

        /// A parsed request takes its place in line; one that does not keep the connection
        /// alive is the last.
        mutating func requestAdmitted(keepAlive: Bool) {
            if !keepAlive, phase == .open { phase = .closing }
        }

        mutating func asyncStarted() { asyncInFlight += 1 }
        mutating func asyncFinished() { asyncInFlight -= 1 }

        /// An error response was queued as the last one.
        mutating func failed() {
            phase = .closing
            headStartedAt = nil
            bodyStartedAt = nil
        }

        /// More of a body the output waited for has arrived: the write-stall clock starts again.
        mutating func bodyArrived(at now: UInt64) {
            lastWriteProgress = now
        }

        mutating func bytesWritten(at now: UInt64) {
            heardFrom = true
            lastWriteProgress = now
            lastActivity = now
        }

        mutating func lingerStarted(at now: UInt64) {
            phase = .lingering(deadline: now &+ limits.linger)
        }

        /// A stop marks the last owed answer as final.
        mutating func closeAfterOwed() {
            if phase == .open { phase = .closing }
        }

        // MARK: Decisions

        /// No further request may be parsed or started: the output (written or waiting to be
        /// rendered) is at its bound, or it waits while the server's output across all
        /// connections is at its bound, too many answers are owed, or an answer of unknown
        /// size is still being made (so only one runs at a time). Never while a dispatched
        /// request's body streams in: its answer may wait for the rest of it.
        func isBackPressured(_ load: Load) -> Bool {
            !load.streamingBody && (load.responsesOwed >= limits.maxPipelinedRequests || load.pendingOutput >= limits.maxOutputBytes
                || asyncInFlight > 0 || load.renderBacklog || load.budgetSpent)
        }

        /// Whether to watch the socket for reading.
        func wantsRead(_ load: Load) -> Bool {
            switch phase {
            case .open: !peerClosedWrite && !isBackPressured(load)
            case .lingering: true
            case .closing: !peerClosedWrite && load.streamingBody
            }
        }

        /// Whether to watch the socket for room to write: not while the output waits for a
        /// body still arriving (the stream wakes the loop then, not the socket).
        func wantsWrite(_ load: Load) -> Bool {
            load.pendingOutput > 0 && !load.awaitingBody
        }

        func tick(at now: UInt64, _ load: Load) -> TickAction {
            if case .lingering(let deadline) = phase { return now >= deadline ? .close : .none }
            // Waiting for an upstream's body is not the client's stall: the upstream's own
            // stall limit ends a transfer that stops.
            if load.pendingOutput > 0, !load.awaitingBody, now &- lastWriteProgress > limits.writeStall { return .close }
            guard phase == .open || load.streamingBody else { return .none }
            // Never used: it has had its chance, and costs a slot others may need.
            if !heardFrom, load.responsesOwed == 0, load.pendingOutput == 0, headStartedAt == nil, now &- lastActivity > limits.firstByte {
                return .close
            }
            if let started = headStartedAt, now &- started > limits.headerRead {
                return .timeout("The request header was not received in time.")
            }
            // While back-pressured nothing is read, so a body cannot make progress: not its fault.
            if let started = bodyStartedAt, !isBackPressured(load),
               now &- lastBodyProgress > limits.bodyGap || (now &- started > limits.bodyTotal && !load.bodyInFile) {
                return .timeout("The request body did not keep arriving.")
            }
            if load.responsesOwed == 0, load.pendingOutput == 0, headStartedAt == nil, bodyStartedAt == nil,
               now &- lastActivity > limits.idle {
                return .close
            }
            return .none
        }

        func settle(_ load: Load, draining: Bool) -> SettleAction {
            guard load.pendingOutput == 0, load.responsesOwed == 0 else { return .keep }
            switch phase {
            case .closing: return .linger
            case .open where peerClosedWrite: return .close
            case .open where draining && isIdle(load): return .linger
            default: return .keep
            }
        }

        func drain(_ load: Load) -> DrainAction {
            if phase == .open, isIdle(load) { return .linger }
            if !load.requestInProgress, !load.inputBuffered, load.responsesOwed > 0 { return .closeAfterOwed }
            return .finishRequest
        }

        /// No request in progress, none owed, nothing to write.
        func isIdle(_ load: Load) -> Bool {
            load.responsesOwed == 0 && load.pendingOutput == 0 && !load.requestInProgress && !load.inputBuffered
        }
    }
}
