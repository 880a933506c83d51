// One place for system calls: EINTR is retried, EAGAIN is "not now", the rest throws.
#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// A failed system call, with the name of the call and errno.
public struct SystemError: Error, CustomStringConvertible, Sendable {
    public let call: String
    public let errno: Int32

    public var description: String { "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))" }
}

/// Outcome of a non-blocking I/O call: done (with a count) or would block.
enum IOResult: Equatable {
    case done(Int)
    case wouldBlock
}

enum System {
    /// Retries on EINTR; returns the result or throws for any other failure.
    @inline(__always)
    static func call(_ name: String, _ body: () -> Int32) throws(SystemError) -> Int32 {
        while true {
            let result = body()
            if result >= 0 { return result }
            let err = larder_errno()
            if err == EINTR { continue }
            throw SystemError(call: name, errno: err)
        }
    }

    /// Like `call`, but EAGAIN/EWOULDBLOCK become `.wouldBlock`.
    @inline(__always)
    static func nonBlocking(_ name: String, _ body: () -> Int) throws(SystemError) -> IOResult {
        while true {
            let result = body()
            if result >= 0 { return .done(result) }
            let err = larder_errno()
            if err == EINTR { continue }
            if err == EAGAIN || err == EWOULDBLOCK { return .wouldBlock }
            throw SystemError(call: name, errno: err)
        }
    }

    /// `recv`, not `read`: on a socket `read` goes through the file layer first (position
    /// lock, permission hooks, `vfs_read`), a share of a memory hit's server CPU (bench cell:
    /// hot key, server CPU µs/req).
    static func receive(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult {
        try nonBlocking("recv") { Glibc.recv(fd, buffer.baseAddress, buffer.count, 0) }
    }

    /// `more`: further bytes follow at once (`MSG_MORE`), so a head and the shared body
    /// after it leave in the same packets.
    static func send(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, more: Bool = false) throws(SystemError) -> IOResult {
        let flags = Int32(MSG_NOSIGNAL) | (more ? Int32(MSG_MORE) : 0)
        return try nonBlocking("send") { Glibc.send(fd, buffer.baseAddress, buffer.count, flags) }
    }

    /// `count` bytes of `file` from `offset` to the socket, copied by the kernel. A file that
    /// ends early (sendfile says 0) is an error: the client has been promised those bytes.
    static func sendFile(_ fd: Int32, _ file: Int32, offset: Int, count: Int) throws(SystemError) -> IOResult {
        var position = off_t(offset)
        let result = try nonBlocking("sendfile") { Glibc.sendfile(fd, file, &position, count) }
        if result == .done(0), count > 0 { throw SystemError(call: "sendfile", errno: EIO) }
        return result
    }

    static func close(_ fd: Int32) {
        // Linux closes the descriptor even when close reports EINTR: never retry.
        _ = Glibc.close(fd)
    }

    static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) throws(SystemError) {
        var value = value
        _ = try call("setsockopt") {
            setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    /// Wall-clock seconds since the epoch, coarse: cheap enough to call per loop iteration.
    static func wallSeconds() -> Int {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME_COARSE, &ts)
        return ts.tv_sec
    }
}

extension System {
    /// Online CPUs, at least 1.
    static var cpuCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
}
