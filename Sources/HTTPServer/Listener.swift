#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// Opens a non-blocking listening socket with `SO_REUSEPORT`, so each event loop can
/// have its own and the kernel spreads new connections across them.
enum Listener {
    /// Fails with EADDRINUSE when anything already listens on the port. `SO_REUSEPORT` would
    /// otherwise let a second server of the same user join the port silently and take a share
    /// of its connections, where an operator expects "port in use". A plain bind fails
    /// whenever the port is taken, whatever options the holder used.
    static func ensureAvailable(host: String, port: Int) throws(SystemError) {
        guard port != 0 else { return }
        let probe = try open(host: host, port: port, reusePort: false, listening: false)
        System.close(probe)
    }

    static func open(host: String, port: Int, reusePort: Bool = true, listening: Bool = true) throws(SystemError) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &result)
        guard status == 0, let info = result else {
            throw SystemError(call: "getaddrinfo(\(host))", errno: status == EAI_SYSTEM ? larder_errno() : EINVAL)
        }
        defer { freeaddrinfo(result) }

        let fd = try System.call("socket") {
            socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        do {
            try System.setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
            if reusePort { try System.setOption(fd, SOL_SOCKET, SO_REUSEPORT, 1) }
            _ = try System.call("bind(\(host):\(port))") { bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) }
            if listening { _ = try System.call("listen") { listen(fd, 4096) } }
        } catch {
            System.close(fd)
            throw error
        }
        return fd
    }

    /// The port the kernel chose (for port 0).
    static func boundPort(_ fd: Int32) -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &length) }
        }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
            }
        case AF_INET6:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
        default:
            return 0
        }
    }
}
