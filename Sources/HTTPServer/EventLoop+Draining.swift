import HTTPCore
#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// A graceful stop, and the timeouts the sweep of each tick applies.
extension EventLoop {
    func beginDrain() {
        drainDeadline = MonotonicClock.nanoseconds() &+ configuration.shutdownGracePeriod.nanoseconds
        closeListener()
        for connection in Array(connections.values) {
            // A request the kernel already holds for us was received: read it, so it is
            // answered (with `Connection: close`) rather than reset by closing over it.
            // Reading is bounded (it stops once the input holds the output bound).
            if connection.state.isOpen, !connection.state.peerClosedWrite {
                guard read(connection) else { continue }
                service(connection)
                guard connections[connection.fd] === connection else { continue }
            }
            switch connection.state.drain(connection.load) {
            case .linger:
                linger(connection)
            case .closeAfterOwed:
                if connection.closeAfterOwedResponses() { connection.state.closeAfterOwed() }
            case .finishRequest:
                break
            }
        }
    }

    var draining: Bool { drainDeadline != nil }

    func sweep(now: UInt64) {
        setListener(paused: false)
        if let deadline = drainDeadline, now >= deadline {
            for connection in Array(connections.values) { close(connection) }
            return
        }
        for connection in Array(connections.values) {
            switch connection.state.tick(at: now, connection.load) {
            case .none:
                break
            case .close:
                close(connection)
            case .timeout(let detail):
                fail(connection, status: 408, detail: detail)
                service(connection)
            }
        }
    }
}
