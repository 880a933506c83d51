import Locking
import Synchronization

/// Connections that have sent nothing yet, counted by client address across every loop of a
/// server, so one address cannot hold every connection slot with connections it never uses
/// (`HTTPServerConfiguration.maxUnusedConnectionsPerClient`). Touched when a connection is
/// accepted, on its first bytes and at its close; never per request.
final class UnusedConnections: Sendable {
    private let counts = Locked<[String: Int]>([:])

    /// Counts one more unused connection from `address`, unless it already has `limit`.
    func admit(_ address: String, limit: Int) -> Bool {
        counts.withLock { counts in
            let now = counts[address, default: 0]
            guard now < limit else { return false }
            counts[address] = now + 1
            return true
        }
    }

    /// One of `address`'s unused connections sent its first bytes, or closed.
    func release(_ address: String) {
        counts.withLock { counts in
            guard let now = counts[address] else { return }
            counts[address] = now > 1 ? now - 1 : nil
        }
    }

    /// Unused connections from `address` now (for tests).
    func count(_ address: String) -> Int { counts.withLock { $0[address, default: 0] } }
}
