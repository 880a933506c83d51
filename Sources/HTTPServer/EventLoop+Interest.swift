import Synchronization
import HTTPCore
#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// Which events each connection is watched for in the loop's epoll set, changed once per turn.
extension EventLoop {
    func wantedEvents(_ connection: Connection) -> UInt32 {
        var events: UInt32 = 0
        let load = connection.load
        if connection.state.wantsRead(load) { events |= EPOLLIN.rawValue }
        if connection.state.wantsWrite(load) { events |= EPOLLOUT.rawValue }
        return events
    }

    /// Notes that the connection's epoll interest must change; the change is made before the
    /// loop next waits (`applyInterest`). An answer that goes async and comes back within the
    /// same turn (a disk hit read from the page cache) then costs no epoll_ctl at all.
    func updateInterest(_ connection: Connection) {
        guard !connection.interestQueued, needsRegistering(connection) else { return }
        connection.interestQueued = true
        interestQueue.append(connection)
    }

    /// Whether epoll must be told before the loop waits. Read interest is dropped lazily: a
    /// connection that stops reading while its answer is made (a miss, a disk read) stays
    /// registered for reading, since its client almost always sends nothing until answered;
    /// dropping and restoring it cost two epoll_ctl calls per such request, the first before
    /// the upstream was even asked. Should something arrive meanwhile, `handleEvent` drops it then.
    private func needsRegistering(_ connection: Connection) -> Bool {
        let registered = connection.registeredEvents
        guard registered != UInt32.max else { return true }
        let wanted = wantedEvents(connection)
        return wanted != registered && wanted != registered & ~EPOLLIN.rawValue
    }

    func applyInterest() {
        for connection in interestQueue {
            connection.interestQueued = false
            guard connections[connection.fd] === connection, needsRegistering(connection) else { continue }  // or closed meanwhile
            register(connection, wantedEvents(connection))
        }
        interestQueue.removeAll(keepingCapacity: true)
    }

    func register(_ connection: Connection, _ events: UInt32) {
        changeEpoll(connection.registeredEvents == UInt32.max ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, connection.fd, events, connection.token)
        connection.registeredEvents = events
    }

    /// One epoll_ctl for a connection's or a guest's descriptor, counted (`epollChanges`, for tests).
    @discardableResult
    func changeEpoll(_ op: Int32, _ fd: Int32, _ events: UInt32, _ token: UInt64) -> Int32 {
        shared.epollChanges.add(1, ordering: .relaxed)
        return larder_epoll_ctl(epfd, op, fd, events, token)
    }
}
