import Synchronization
import HTTPCore
import LoopGuests
#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// The guests of one loop (`LoopReactor`): who they are, which descriptors they watch and
/// when their timers are due. Touched only on the loop's thread.
struct LoopGuests {
    /// Marks a watched descriptor's epoll token; connection tokens keep this bit clear
    /// (their generation would need 2^31 connections to reach it).
    static let watchFlag: UInt64 = 1 << 63

    var members: [ObjectIdentifier: any LoopGuest] = [:]
    /// The descriptors registered with epoll for a guest, with what they are registered for.
    /// `wanted` is false once the guest stopped watching one: it stays registered (see `watch`).
    var watched: [Int32: (key: ObjectIdentifier, events: UInt32, wanted: Bool)] = [:]
    var deadlines: [ObjectIdentifier: UInt64] = [:]

    /// How long epoll may wait: the sweep tick, or less when a timer is due sooner.
    func waitMilliseconds(now: UInt64, tick: Int32) -> Int32 {
        guard let next = deadlines.values.min() else { return tick }
        guard next > now else { return 0 }
        return min(tick, Int32(clamping: (next - now + 999_999) / 1_000_000))
    }
}

extension EventLoop: LoopReactor {
    var isCurrent: Bool { loopThread.load(ordering: .relaxed) == UInt(pthread_self()) }

    func guest(for key: ObjectIdentifier, make: () -> any LoopGuest) -> any LoopGuest {
        if let guest = guests.members[key] { return guest }
        let guest = make()
        guests.members[key] = guest
        return guest
    }

    /// Off the loop's thread (a Task that outlived its loop runs elsewhere) nothing is
    /// watched: the epoll set may be closed, and its number another descriptor by now.
    ///
    /// A descriptor the guest stops watching stays registered until it reports an event
    /// (`guestEvent` drops it then): libcurl stops watching a connection at the end of every
    /// transfer and watches it again at the start of the next, and the EPOLL_CTL_DEL came
    /// between the upstream's answer and the caller's. Watched again, it is modified, not
    /// added; should it have been closed meanwhile (the kernel then forgot it, and its number
    /// may be another socket's), the modify fails and it is added.
    func watch(_ fd: Int32, readable: Bool, writable: Bool, for key: ObjectIdentifier) {
        guard isCurrent else { return }
        let events = (readable ? EPOLLIN.rawValue : 0) | (writable ? EPOLLOUT.rawValue : 0)
        let token = LoopGuests.watchFlag | UInt64(UInt32(bitPattern: fd))
        switch (guests.watched[fd], events) {
        case (nil, 0):
            return
        case (nil, _):
            changeEpoll(EPOLL_CTL_ADD, fd, events, token)
            guests.watched[fd] = (key, events, true)
        case (let old?, 0):
            guests.watched[fd] = (old.key, old.events, false)
        case (let old?, _):
            if old.events != events || !old.wanted, changeEpoll(EPOLL_CTL_MOD, fd, events, token) != 0 {
                changeEpoll(EPOLL_CTL_ADD, fd, events, token)
            }
            guests.watched[fd] = (key, events, true)
        }
    }

    func setTimer(milliseconds: Int?, for key: ObjectIdentifier) {
        guard isCurrent else { return }
        guests.deadlines[key] = milliseconds.map { MonotonicClock.nanoseconds() &+ UInt64(max(0, $0)) &* 1_000_000 }
    }

    /// Off the loop's thread there is no turn to wait for: the work runs now. A Task that
    /// outlived its loop (a disk write after a fetch finished past the stop) would otherwise
    /// leave it in a list no turn will ever run.
    func afterTurn(_ work: @escaping () -> Void) {
        guard isCurrent else { return work() }
        afterTurnWork.append(work)
    }

    // MARK: Called by the loop

    func runAfterTurnWork() {
        while !afterTurnWork.isEmpty {
            let work = afterTurnWork
            afterTurnWork = []
            work.forEach { $0() }
        }
    }

    /// An epoll event for a watched descriptor.
    func guestEvent(_ fd: Int32, flags: UInt32) {
        guard let watched = guests.watched[fd] else { return }
        guard watched.wanted else {
            // Registered still, but no longer watched (see `watch`): an idle connection the
            // upstream closed, say. libcurl finds that out itself before it reuses one.
            changeEpoll(EPOLL_CTL_DEL, fd, 0, 0)
            guests.watched[fd] = nil
            return
        }
        guard let guest = guests.members[watched.key] else { return }
        guest.ready(fd, readable: flags & EPOLLIN.rawValue != 0, writable: flags & EPOLLOUT.rawValue != 0,
                    failed: flags & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0)
    }

    /// Fires the timers that are due; a guest may set its timer again from `timerFired`.
    func fireDueTimers(now: UInt64) {
        guard !guests.deadlines.isEmpty, guests.deadlines.values.contains(where: { $0 <= now }) else { return }
        let due = guests.deadlines.filter { $0.value <= now }.map(\.key)
        for key in due {
            guests.deadlines[key] = nil
            guests.members[key]?.timerFired()
        }
    }

    /// Tells every guest the loop is ending, then forgets them and their descriptors.
    func endGuests() {
        let members = guests.members.values
        for guest in members { guest.loopEnded() }
        for fd in guests.watched.keys { _ = larder_epoll_ctl(epfd, EPOLL_CTL_DEL, fd, 0, 0) }
        guests = LoopGuests()
    }
}
