import Logging
import Synchronization
import HTTPCore
#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// New connections from the loop's own listener, and the listener paused or closed.
extension EventLoop {
    func acceptConnections() {
        for _ in 0..<128 {
            let fd = larder_accept_nonblocking(listenerFD)
            if fd < 0 {
                switch larder_errno() {
                case EAGAIN, EWOULDBLOCK: return
                case EINTR, ECONNABORTED, EPROTO: continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    // Out of descriptors: stop watching the listener until the next sweep,
                    // or level-triggered epoll would spin on it.
                    logger.warning("accept failed, pausing", metadata: ["errno": "\(larder_errno())"])
                    setListener(paused: true)
                    return
                default:
                    logger.error("accept failed", metadata: ["errno": "\(larder_errno())"])
                    return
                }
            }
            try? System.setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
            shared.acceptedConnections.add(1, ordering: .relaxed)
            let open = shared.openConnections.add(1, ordering: .relaxed).newValue
            generation += 1
            let now = MonotonicClock.nanoseconds()
            let connection = Connection(fd: fd, token: generation << 32 | UInt64(UInt32(bitPattern: fd)),
                                        parser: RequestParser(configuration: configuration), limits: limits,
                                        budget: shared.outputBudget, now: now)
            // Once half the slots are taken: below that, a burst of connections from one
            // address (a proxy in front, a load test) is accepted before any has sent a byte.
            // Refused before it is watched: closing a connection that sent nothing is a FIN,
            // and it never takes a slot for a linger.
            let limit = open > configuration.maxConnections / 2 ? configuration.maxUnusedConnectionsPerClient : Int.max
            guard shared.unusedConnections.admit(connection.clientAddress, limit: limit) else {
                System.close(fd)
                shared.openConnections.subtract(1, ordering: .relaxed)
                shared.refusedUnused.add(1, ordering: .relaxed)
                continue
            }
            connections[fd] = connection
            yieldDue = true
            updateInterest(connection)
            if open > configuration.maxConnections {
                fail(connection, status: 503, detail: "The server has too many open connections; try again shortly.")
                service(connection)
            }
        }
    }

    func setListener(paused: Bool) {
        guard listenerFD >= 0, paused != listenerPaused else { return }
        listenerPaused = paused
        _ = larder_epoll_ctl(epfd, EPOLL_CTL_MOD, listenerFD, paused ? 0 : EPOLLIN.rawValue, Self.listenerToken)
    }

    func closeListener() {
        guard listenerFD >= 0 else { return }
        _ = larder_epoll_ctl(epfd, EPOLL_CTL_DEL, listenerFD, 0, 0)
        System.close(listenerFD)
        listenerFD = -1
    }
}
