import HTTPCore
import Bodies
#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Logging
import Synchronization

/// One thread blocking in `epoll_wait`, with its own listening socket and connections.
///
/// Everything a loop owns is touched only on its thread; the one door in from other
/// threads is `post` (an async handler's response) and `requestStop`, which queue work
/// under a lock and wake the loop through its eventfd.
final class EventLoop: @unchecked Sendable {
    static let listenerToken: UInt64 = 1
    private static let wakeToken: UInt64 = 2
    static let maxEvents: Int32 = 256
    private static let readChunk = 64 * 1024

    let configuration: HTTPServerConfiguration
    let limits: Connection.State.Limits
    let handler: HTTPHandler
    let shared: ServerSharedState
    let logger: Logger
    let epfd: Int32
    let wakeFD: Int32
    var listenerFD: Int32
    var listenerPaused = false

    var connections: [Int32: Connection] = [:]
    var generation: UInt64 = 0
    var date = DateHeaderCache()
    /// The monotonic time of this turn: read once when `epoll_wait` returns and again before
    /// the turn's closing work, and stamped on every read, write and wait of the turn. A read
    /// per request was seven clock reads per cached answer; a stamp up to one turn early
    /// moves a timeout of seconds by microseconds.
    private var turnTime: UInt64 = MonotonicClock.nanoseconds()
    private let scratch: UnsafeMutableRawBufferPointer
    private let tick: Int32
    let idleStrategy: IdleStrategy
    var turnYielding = TurnYielding()
    /// This turn heard from a caller (a connection accepted, a request's bytes read) or left a
    /// connection waiting for more of a streamed body: only then may the loop yield before it
    /// waits (`waitForEvents`).
    var yieldDue = false
    private let onExit: @Sendable () -> Void

    let inbox: LoopInbox
    var drainDeadline: UInt64?
    var guests = LoopGuests()
    /// The loop queued a job of its own since it last drained the inbox (no wake was written).
    var queuedFromLoop = false
    /// Work for the end of this turn (`afterTurn`).
    var afterTurnWork: [() -> Void] = []
    /// Connections whose epoll interest changes before the loop next waits.
    var interestQueue: [Connection] = []
    /// Connections that dispatched their share of a turn with requests still buffered
    /// (`EventLoop+Fairness`).
    var resumeQueue: [Connection] = []
    /// The loop's thread while it runs (`isCurrent`), 0 otherwise.
    let loopThread = Atomic<UInt>(0)

    init(listenerFD: Int32, configuration: HTTPServerConfiguration, handler: @escaping HTTPHandler,
         shared: ServerSharedState, logger: Logger, onExit: @escaping @Sendable () -> Void) throws(SystemError) {
        self.listenerFD = listenerFD
        self.configuration = configuration
        self.limits = Connection.State.Limits(configuration)
        self.handler = handler
        self.shared = shared
        self.logger = logger
        self.onExit = onExit
        epfd = try System.call("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
        wakeFD = try System.call("eventfd") { eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) }
        inbox = LoopInbox(wakeFD: wakeFD)
        scratch = .allocate(byteCount: Self.readChunk, alignment: 16)
        let shortest = min(configuration.headerReadTimeout, configuration.idleTimeout, configuration.writeStallTimeout,
                           configuration.bodyProgressTimeout)
        tick = Int32(clamping: max(5, min(1000, shortest.nanoseconds / 4_000_000)))
        idleStrategy = configuration.idleStrategy
        _ = try System.call("epoll_ctl") { larder_epoll_ctl(epfd, EPOLL_CTL_ADD, listenerFD, EPOLLIN.rawValue, Self.listenerToken) }
        _ = try System.call("epoll_ctl") { larder_epoll_ctl(epfd, EPOLL_CTL_ADD, wakeFD, EPOLLIN.rawValue, Self.wakeToken) }
    }

    // MARK: Doors from other threads

    /// Starts a graceful stop: no new connections, in-flight responses finished, idle ones closed.
    func requestStop() {
        inbox.requestStop()
    }

    // MARK: The loop

    func run() {
        let events = UnsafeMutableRawPointer.allocate(byteCount: larder_epoll_event_size() * Int(Self.maxEvents), alignment: 16)
            .bindMemory(to: epoll_event.self, capacity: Int(Self.maxEvents))
        defer { events.deallocate() }
        var lastSweep = MonotonicClock.nanoseconds()
        let tickNanoseconds = UInt64(tick) * 1_000_000
        loopThread.store(UInt(pthread_self()), ordering: .relaxed)

        while true {
            // A job the loop queued for itself after its last look at the inbox: no waiting.
            let wait = queuedFromLoop || !resumeQueue.isEmpty ? 0
                : guests.deadlines.isEmpty ? tick : guests.waitMilliseconds(now: MonotonicClock.nanoseconds(), tick: tick)
            let count = waitForEvents(events, wait: wait)
            beginTurn()
            if count < 0, larder_errno() != EINTR {
                logger.critical("epoll_wait failed", metadata: ["errno": "\(larder_errno())"])
                break
            }
            for i in 0..<Int32(max(0, count)) {
                let token = larder_epoll_event_token(events, i)
                let flags = larder_epoll_event_flags(events, i)
                switch token {
                case Self.listenerToken: acceptConnections()
                case Self.wakeToken: drainInbox(woken: true)
                case _ where token & LoopGuests.watchFlag != 0:
                    guestEvent(Int32(truncatingIfNeeded: token & 0xFFFF_FFFF), flags: flags)
                default:
                    let fd = Int32(truncatingIfNeeded: token & 0xFFFF_FFFF)
                    // A stale event for a closed and reused descriptor carries an old generation.
                    guard let connection = connections[fd], connection.token == token else { continue }
                    handleEvent(connection, flags: flags)
                }
            }
            let now = MonotonicClock.nanoseconds()
            turnTime = now
            fireDueTimers(now: now)
            if now &- lastSweep >= tickNanoseconds {
                lastSweep = now
                sweep(now: now)
            }
            if queuedFromLoop {
                drainInbox(woken: false)
                // A job that began a fetch set libcurl's timer to fire at once: fired now, the
                // request goes out in this turn rather than after one more look at epoll.
                fireDueTimers(now: MonotonicClock.nanoseconds())
                // libcurl may read the answer's head in that same call (a fast origin): the job
                // it resumed runs now, so the head goes out before the after-turn work lets the
                // paused stream take its next share (bench cell: large objects, the 1 GiB
                // streamed miss's first byte).
                if queuedFromLoop { drainInbox(woken: false) }
            }
            if !afterTurnWork.isEmpty { runAfterTurnWork() }
            if !resumeQueue.isEmpty { resumeConnections() }
            if !interestQueue.isEmpty { applyInterest() }
            if drainDeadline != nil, connections.isEmpty { break }
        }
        shutDownLoop()
    }

    /// A turn's one clock read for its stamps, and the `Date` line due for a look.
    private func beginTurn() {
        turnTime = MonotonicClock.nanoseconds()
        date.newTurn()
    }

    private func shutDownLoop() {
        beginTurn()
        runAfterTurnWork()
        // Guests first: a job of theirs that arrives later runs elsewhere and finds them ended.
        endGuests()
        loopThread.store(0, ordering: .relaxed)
        inbox.close(executor: asUnownedTaskExecutor())  // closes wakeFD, which the inbox owns from here on
        for connection in Array(connections.values) { close(connection) }
        closeListener()
        System.close(epfd)
        scratch.deallocate()
        onExit()
    }

    // MARK: Connections

    private func handleEvent(_ connection: Connection, flags: UInt32) {
        if flags & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 {
            close(connection)
            return
        }
        if flags & EPOLLIN.rawValue != 0 {
            if connection.state.wantsRead(connection.load) {
                guard read(connection) else { return }
            } else {
                // Read interest is dropped only now (see `updateInterest`): what arrived (a request
                // pipelined behind one still being answered, or the peer's close) stays in the
                // kernel until it is wanted, and level-triggered epoll stops reporting it.
                register(connection, wantedEvents(connection))
            }
        }
        service(connection)
    }

    /// Reads what is available. Returns false when the connection was closed.
    func read(_ connection: Connection) -> Bool {
        while true {
            // What a connection holds unparsed stays within one chunk; the rest waits in the
            // kernel (a lingering connection's bytes are discarded, so it reads whole chunks).
            let room = connection.state.isLingering ? scratch.count : Self.readChunk - connection.input.count
            guard room > 0 else { return true }
            let result: IOResult
            do {
                result = try System.receive(connection.fd, UnsafeMutableRawBufferPointer(rebasing: scratch[0..<room]))
            } catch {
                close(connection)
                return false
            }
            guard case .done(let n) = result else { return true }
            if n == 0 {
                connection.state.peerClosed()
                if connection.state.isLingering {
                    close(connection)
                    return false
                }
                return true
            }
            if connection.state.isLingering { continue }  // discard what a closing client still sends
            if connection.unused { markUsed(connection) }
            connection.input.append(UnsafeRawBufferPointer(rebasing: scratch[0..<n]))
            yieldDue = true
            connection.state.bytesRead(at: turnTime)
            if n < room { return true }
        }
    }

    /// Moves the connection forward: write, parse and dispatch what the limits allow, write
    /// again, then close or re-arm epoll as the new state requires.
    func service(_ connection: Connection) {
        guard pump(connection) else { return }
        // A closing connection (`Connection: close`, HTTP/1.0, a stop) still parses the body
        // of the request it last dispatched: unparsed, the body stops where the input fills.
        if connection.state.isOpen || connection.parser.streamingBody {
            // Requests already buffered must not wait for new bytes that may never come:
            // keep parsing for as long as writing makes room, up to a turn's share.
            var share = Self.requestsPerTurn
            parsing: while true {
                switch parseAndDispatch(connection, share: &share) {
                case .needMore:
                    break parsing
                case .backPressured:
                    guard pump(connection) else { return }
                    if connection.state.isBackPressured(connection.load) { break parsing }
                case .shareUsed:
                    resumeNextTurn(connection)
                    break parsing
                }
            }
            guard pump(connection) else { return }
            // The client may have read everything while that last write ran: parsing stopped
            // for back-pressure that is gone now, with requests still buffered, and no event
            // will come for bytes already read. They are parsed next turn.
            if !connection.input.isEmpty, !connection.state.isBackPressured(connection.load) { resumeNextTurn(connection) }
        }
        switch connection.state.settle(connection.load, draining: draining) {
        case .keep: updateInterest(connection)
        case .linger: linger(connection)
        case .close: close(connection)
        }
        account(connection)
    }

    /// Brings the server's count of output waiting up to date with this connection's. Most
    /// answers leave in the pass that made them, so then nothing changes and nothing is shared.
    func account(_ connection: Connection) {
        let waiting = connections[connection.fd] === connection ? connection.output.pendingInMemory : 0
        guard waiting != connection.accountedOutput else { return }
        shared.outputBudget.add(waiting - connection.accountedOutput)
        connection.accountedOutput = waiting
    }

    /// Writes output and renders waiting responses into it as room appears. Returns false
    /// when the connection was closed.
    private func pump(_ connection: Connection) -> Bool {
        while true {
            guard flush(connection) else { return false }
            guard connection.hasRenderBacklog, connection.pendingOutput < limits.maxOutputBytes else { return true }
            connection.renderReady(date: &date)
        }
    }

    /// Why parsing stopped with bytes still buffered, or that it used them all.
    private enum ParseStop {
        case needMore
        /// Back-pressure: the rest waits in `input` until the client reads.
        case backPressured
        /// The connection dispatched its share of this turn; the rest waits for the next.
        case shareUsed
    }

    /// Parses and dispatches buffered requests, at most `share` of them.
    private func parseAndDispatch(_ connection: Connection, share: inout Int) -> ParseStop {
        // A closing connection still takes in the body of the request it last dispatched.
        while connection.state.isOpen || connection.parser.streamingBody, !connection.input.isEmpty || connection.parser.inProgress {
            if connection.state.isBackPressured(connection.load) {
                connection.input.compact()
                return .backPressured
            }
            if share == 0 {
                connection.input.compact()
                return .shareUsed
            }
            switch connection.parser.next(&connection.input) {
            case .needMore:
                continueIfAsked(connection)
                // The client stopped sending before a streamed body was whole: it never will be.
                if connection.parser.streamingBody, connection.state.peerClosedWrite { connection.parser.abandonBody(Self.endedShort) }
                connection.state.parserWaiting(readingHead: connection.parser.readingHead, readingBody: connection.parser.readingBody,
                                               at: turnTime)
                connection.input.compact()
                return .needMore
            case .request(var request):
                connection.state.requestParsed()
                request.clientAddress = connection.clientAddress
                share -= 1
                dispatch(request, on: connection)
            case .bodyEnded:
                continue
            case .failure(let error):
                fail(connection, status: error.status, detail: error.detail)
            }
        }
        connection.input.compact()
        return .needMore
    }

    /// Answers `100 Continue` to a request that asked (RFC 9110 §10.1.1) once it is next in
    /// line: a request whose body streams is already dispatched, and owed.
    private func continueIfAsked(_ connection: Connection) {
        guard connection.parser.wantsContinue, connection.responsesOwed == (connection.parser.streamingBody ? 1 : 0) else { return }
        connection.parser.wantsContinue = false
        connection.output.bytes.append("HTTP/1.1 100 Continue\r\n\r\n")
    }

    /// How the handler of a request whose client closed mid-body answers it.
    static let endedShort = BodyStream.Refusal(status: 400, detail: "The client closed its side before the request body was whole.")

    /// Writes as much output as the socket takes. Returns false when the connection was closed.
    private func flush(_ connection: Connection) -> Bool {
        while connection.pendingOutput > 0 {
            let result: IOResult
            do {
                result = try connection.output.withNextPiece { piece, more throws(SystemError) in
                    switch piece {
                    case .bytes(let bytes): try System.send(connection.fd, bytes, more: more)
                    case .file(let file, let offset, let count): try System.sendFile(connection.fd, file, offset: offset, count: count)
                    case .waiting(let stream, let position): awaitStream(stream, beyond: position, connection)
                    // The answer's head promised a body that will not come: only closing says so.
                    case .failed: throw SystemError(call: "relay", errno: EPIPE)
                    }
                }
            } catch {
                close(connection)
                return false
            }
            guard case .done(let n) = result else { break }
            if n == 0 { continue }  // a stream moved on while its waiter was being set: look again
            connection.outputWritten(n)
            connection.state.bytesWritten(at: turnTime)
        }
        return true
    }
}
