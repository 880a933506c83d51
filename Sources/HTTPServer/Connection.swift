import HTTPCore
import CLinux
import Bodies

/// One client connection, owned by exactly one event loop and touched only on its thread.
///
/// It holds what was read and not yet parsed, the responses owed in request order
/// (pipelining: a later response that is ready waits for the earlier ones) and the bytes
/// not yet written; its rules (timeouts, back-pressure, closing) are `state`.
final class Connection {
    let fd: Int32
    let token: UInt64
    /// The peer's IP address, read once at accept; every request on the connection carries it.
    let clientAddress: String
    /// Nothing has been read from it yet: it counts among its address's unused connections.
    var unused = true
    /// The rules: phase, timers, back-pressure (`Connection.State`).
    var state: State
    var parser: RequestParser
    var input = InputBuffer()

    var output = OutputBuffer()
    var pendingOutput: Int { output.pending }
    /// The server's bound on output waiting across its connections, and how much of this
    /// connection's it counts now (`EventLoop.account`).
    let budget: OutputBudget
    var accountedOutput = 0

    /// Sequence number the next parsed request gets.
    var nextSequence = 0
    /// Sequence number of the response that must leave next.
    var nextToSend = 0
    /// How each owed response is to be written, in request order (front = `nextToSend`).
    var owed: [ResponseSerializer.Context] = []
    var owedFront = 0
    /// Finished responses not yet rendered into `output`, by sequence number: those that
    /// finished ahead of an earlier one, and those waiting for `output` to drain below its
    /// bound. They share their bodies with whoever made them, so waiting here costs little.
    var ready: [Int: HTTPResponse] = [:]

    /// epoll interest currently registered.
    var registeredEvents: UInt32 = .max  // .max: not yet registered with epoll
    /// Waiting in the loop's queue of interest changes.
    var interestQueued = false
    /// Waiting to be serviced again next turn, its share of this one used.
    var resumeQueued = false
    /// Everything before the next output is sent, and that output is a body still arriving:
    /// the stream wakes the loop (`EventLoop.awaitStream`), not the socket.
    var awaitingStream = false

    init(fd: Int32, token: UInt64, parser: RequestParser, limits: State.Limits, budget: OutputBudget, now: UInt64) {
        self.budget = budget
        self.fd = fd
        self.token = token
        var text = [CChar](repeating: 0, count: 64)
        _ = larder_peer_address(fd, &text, UInt(text.count))
        // Up to the first NUL, never past the buffer.
        clientAddress = text.withUnsafeBytes { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        self.parser = parser
        self.state = State(limits: limits, now: now)
    }

    /// What the buffers hold, for the rules in `state`.
    var load: State.Load {
        let waiting = pendingOutput
        return State.Load(responsesOwed: responsesOwed, pendingOutput: waiting, renderBacklog: hasRenderBacklog,
                          requestInProgress: parser.inProgress, inputBuffered: !input.isEmpty,
                          budgetSpent: waiting > 0 && budget.isSpent, awaitingBody: awaitingStream,
                          streamingBody: parser.streamingBody, bodyInFile: parser.bodyInFile)
    }

    var responsesOwed: Int { nextSequence - nextToSend }

    /// Takes a sequence number for a parsed request and remembers how to answer it.
    func admit(_ context: ResponseSerializer.Context) -> Int {
        owed.append(context)
        defer { nextSequence += 1 }
        return nextSequence
    }

    /// The request whose answer the connection gave in its handler's stead (`answerInstead`):
    /// the handler's own, when it comes, is dropped.
    private var answeredInstead: Int?

    /// Files a finished response, then renders what is in order into `output` while the
    /// output stays under its bound.
    func complete(_ sequence: Int, _ response: HTTPResponse, date: inout DateHeaderCache) {
        if sequence == answeredInstead {
            answeredInstead = nil
            response.bodySent?(0)
            return
        }
        if sequence == nextToSend, ready.isEmpty, pendingOutput < state.limits.maxOutputBytes {
            // The common case (the next response, room to write it): no detour through `ready`.
            render(response, date: &date)
            return
        }
        ready[sequence] = response
        renderReady(date: &date)
    }

    /// Renders finished responses, in request order, into `output` until the next one is
    /// not finished yet or `output` has reached its bound (the rest waits for a drain).
    func renderReady(date: inout DateHeaderCache) {
        while pendingOutput < state.limits.maxOutputBytes, let response = ready.removeValue(forKey: nextToSend) {
            render(response, date: &date)
        }
    }

    /// A response only the connection's close can end went out (an open-ended body to an
    /// HTTP/1.0 client): nothing may follow it, so later responses are dropped, and the
    /// connection closes once it is sent.
    private var endedByClose = false

    /// Writes the next owed response into `output`.
    private func render(_ response: HTTPResponse, date: inout DateHeaderCache) {
        var context = owed[owedFront]
        if !endedByClose {
            if context.version == .http10, !context.isHead, response.allowsBody, response.body.isOpenEnded {
                context.keepAlive = false
                state.closeAfterOwed()
                endedByClose = true
            }
            ResponseSerializer.write(response, context: context, date: date.current(), into: &output)
        } else {
            response.bodySent?(0)
        }
        owedFront += 1
        nextToSend += 1
        if owedFront == owed.count {
            owed.removeAll(keepingCapacity: true)
            owedFront = 0
        }
    }

    /// Answers the request last admitted with `response`, as the connection's last, unless
    /// its handler has answered already (false then). For an error in a body that arrives
    /// after its request went to the handler: the client gets that error, not a second
    /// answer after whatever the handler makes of the body's failure.
    func answerInstead(_ response: HTTPResponse, date: inout DateHeaderCache) -> Bool {
        let sequence = nextSequence - 1
        guard sequence >= nextToSend, ready[sequence] == nil else { return false }
        owed[owed.count - 1].keepAlive = false
        complete(sequence, response, date: &date)
        answeredInstead = sequence
        return true
    }

    /// Whether a finished response waits only for `output` to drain.
    var hasRenderBacklog: Bool { !ready.isEmpty && ready[nextToSend] != nil }

    /// Marks the last response not yet written as the final one (`Connection: close`).
    /// Returns false when every owed response is already written.
    func closeAfterOwedResponses() -> Bool {
        guard owedFront < owed.count else { return false }
        owed[owed.count - 1].keepAlive = false
        return true
    }

    /// The connection closes: every answer not wholly sent says how much of it went.
    func abandonExchanges() {
        output.abandon()
        for response in ready.values { response.bodySent?(0) }
        ready.removeAll()
    }

    func outputWritten(_ n: Int) {
        output.markSent(n)
    }
}
