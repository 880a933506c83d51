/// One client connection, owned by exactly one event loop and touched only on its thread.
///
/// It holds what was read and not yet parsed, the responses owed in request order
/// (pipelining: a later response that is ready waits for the earlier ones), the bytes
/// not yet written, and the deadlines the loop's sweep checks.
final class Connection {
    /// What the connection is doing, which decides which timeout applies.
    enum Phase {
        /// Reading and answering requests.
        case open
        /// The last response is queued; close once it is written.
        case closing
        /// Write side shut down; reading and discarding until the peer closes or the linger ends,
        /// so an unread request body does not turn our final response into a reset.
        case lingering(deadline: UInt64)
    }

    let fd: Int32
    let token: UInt64
    var phase = Phase.open
    var parser: RequestParser
    var input = InputBuffer()

    var output: [UInt8] = []
    var outputSent = 0
    var pendingOutput: Int { output.count - outputSent }

    /// Sequence number the next parsed request gets.
    var nextSequence = 0
    /// Sequence number of the response that must leave next.
    var nextToSend = 0
    /// How each owed response is to be written, in request order (front = `nextToSend`).
    var owed: [ResponseSerializer.Context] = []
    var owedFront = 0
    /// Responses finished ahead of an earlier one, by sequence number.
    var ready: [Int: HTTPResponse] = [:]

    var readPaused = false
    var peerClosedWrite = false
    /// epoll interest currently registered.
    var registeredEvents: UInt32 = .max  // .max: not yet registered with epoll

    var headStartedAt: UInt64?
    var lastActivity: UInt64
    var lastWriteProgress: UInt64

    init(fd: Int32, token: UInt64, parser: RequestParser, now: UInt64) {
        self.fd = fd
        self.token = token
        self.parser = parser
        self.lastActivity = now
        self.lastWriteProgress = now
    }

    var responsesOwed: Int { nextSequence - nextToSend }

    /// No request in progress, none owed, nothing to write.
    var isIdle: Bool { responsesOwed == 0 && pendingOutput == 0 && !parser.inProgress && input.isEmpty }

    /// Takes a sequence number for a parsed request and remembers how to answer it.
    func admit(_ context: ResponseSerializer.Context) -> Int {
        owed.append(context)
        defer { nextSequence += 1 }
        return nextSequence
    }

    /// Files a finished response and moves every response now in order into `output`.
    func complete(_ sequence: Int, _ response: HTTPResponse, date: inout DateHeaderCache) {
        if sequence != nextToSend {
            ready[sequence] = response
            return
        }
        var response = response
        while true {
            let context = owed[owedFront]
            owedFront += 1
            ResponseSerializer.write(response, context: context, date: date.current(), into: &output)
            nextToSend += 1
            guard let next = ready.removeValue(forKey: nextToSend) else { break }
            response = next
        }
        if owedFront == owed.count {
            owed.removeAll(keepingCapacity: true)
            owedFront = 0
        }
    }

    /// Marks the last response not yet written as the final one (`Connection: close`).
    /// Returns false when every owed response is already written.
    func closeAfterOwedResponses() -> Bool {
        guard owedFront < owed.count else { return false }
        owed[owed.count - 1].keepAlive = false
        return true
    }

    func outputWritten(_ n: Int) {
        outputSent += n
        if outputSent == output.count {
            output.removeAll(keepingCapacity: output.capacity <= 256 * 1024)
            outputSent = 0
        }
    }
}
