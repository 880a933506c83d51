/// A turn's share of each connection: one that pipelines thousands of requests is answered
/// a share at a time, and every other connection of the loop gets its turn between shares.
/// Without it one such client held its loop for as long as the kernel took its answers (a
/// debug build spent seconds per connection, and a new client waited behind them all).
extension EventLoop {
    /// Requests one connection may dispatch in one turn of its loop.
    static let requestsPerTurn = 32

    /// The connection is serviced again in the next turn, which then does not wait.
    func resumeNextTurn(_ connection: Connection) {
        guard !connection.resumeQueued else { return }
        connection.resumeQueued = true
        resumeQueue.append(connection)
    }

    /// Services the connections queued by the last turn (those still open).
    func resumeConnections() {
        let queued = resumeQueue
        resumeQueue.removeAll(keepingCapacity: true)
        for connection in queued {
            connection.resumeQueued = false
            guard connections[connection.fd] === connection else { continue }
            service(connection)
        }
    }
}
