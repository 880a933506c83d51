import HTTPCore
import Bodies
#if canImport(Glibc)
import Glibc
#endif

/// Connections sending a body still arriving (`BodyStream`): when a connection has sent all
/// of it there is so far, it waits for the stream rather than for its socket, and the stream
/// wakes this loop once more is written or the transfer ends.
extension EventLoop {
    /// Registers the wait, once per connection: a second waiter would wake it twice, and
    /// each wake register again, so a connection serviced while it waits (its client
    /// reading) piled up waiters and wakes without bound. `.wouldBlock`: the connection
    /// waits; `.done(0)`: the stream moved on meanwhile, so look again.
    func awaitStream(_ stream: BodyStream, beyond position: Int, _ connection: Connection) -> IOResult {
        if connection.awaitingStream { return .wouldBlock }
        let fd = connection.fd, token = connection.token
        let waits = stream.wait(beyond: position) { [self] in
            Task(executorPreference: self) { self.streamAdvanced(fd: fd, token: token) }
        }
        guard waits else { return .done(0) }
        connection.awaitingStream = true
        // The client was just sent all there is (a streamed answer's head, at first) while this
        // loop goes on relaying the body: the loop yields before it next waits, so the client
        // can read now rather than at the next scheduler tick (bench cell: large objects, the
        // 1 GiB streamed miss's first byte).
        yieldDue = true
        return .wouldBlock
    }

    /// On the loop: the stream a connection waited for moved on.
    private func streamAdvanced(fd: Int32, token: UInt64) {
        // The connection may have closed meanwhile, and its descriptor been reused.
        guard let connection = connections[fd], connection.token == token, connection.awaitingStream else { return }
        connection.awaitingStream = false
        connection.state.bodyArrived(at: MonotonicClock.nanoseconds())
        service(connection)
    }
}
