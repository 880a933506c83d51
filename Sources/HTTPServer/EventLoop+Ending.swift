import Synchronization
import HTTPCore
import Bodies
#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// How a connection ends: an error answer as its last, a lingering close after it, and the
/// close that gives back its slot and its descriptor.
extension EventLoop {
    /// Queues an error response as the connection's last and stops reading requests. An
    /// error in the body of a request already dispatched (its body streaming on) is that
    /// request's answer, in its handler's stead, and the handler hears it as the client's;
    /// when its handler has answered already (it gave up on the body), that answer was the
    /// request's one: nothing more is sent, and the connection closes after it.
    func fail(_ connection: Connection, status: Int, detail: String) {
        let response = ProblemDetails(status: status, detail: detail).response()
        connection.state.failed()
        if connection.parser.streamingBody {
            connection.parser.abandonBody(BodyStream.Refusal(status: status, detail: detail))
            if connection.answerInstead(response, date: &date) { return }
            _ = connection.closeAfterOwedResponses()
            return
        }
        connection.parser.abandonBody()
        let sequence = connection.admit(.init(isHead: false, keepAlive: false, version: .http11))
        connection.complete(sequence, response, date: &date)
        configuration.refusals?(status, detail, connection.clientAddress)
    }

    /// Closes our side after the last answer and reads on until the client closes, so bytes
    /// it already sent do not reset the answer on their way (a lingering close).
    func linger(_ connection: Connection) {
        if connection.state.peerClosedWrite {
            close(connection)
            return
        }
        shutdown(connection.fd, Int32(SHUT_WR))
        connection.state.lingerStarted(at: MonotonicClock.nanoseconds())
        connection.parser.abandonBody()
        connection.input = InputBuffer()
        updateInterest(connection)
    }

    /// The connection sent its first bytes, or closes: no longer among its address's unused ones.
    func markUsed(_ connection: Connection) {
        connection.unused = false
        shared.unusedConnections.release(connection.clientAddress)
    }

    func close(_ connection: Connection) {
        guard connections.removeValue(forKey: connection.fd) != nil else { return }
        connection.parser.abandonBody()
        connection.abandonExchanges()
        if connection.unused { markUsed(connection) }
        account(connection)
        _ = larder_epoll_ctl(epfd, EPOLL_CTL_DEL, connection.fd, 0, 0)
        System.close(connection.fd)
        shared.openConnections.subtract(1, ordering: .relaxed)
    }
}
