#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// A TCP server that misbehaves on purpose: each accepted connection is handed to
/// `behaviour` on a thread of its own (never answering, resetting mid-body, closing
/// without a reply). It listens on a free loopback port and stops when told.
public final class RawServer: Sendable {
    public let port: Int
    private let listener: Int32
    private let stopping = Atomic<Bool>(false)
    private let accepted = Atomic<Int>(0)
    private let peerClosed = Atomic<Int>(0)

    public var connectionsAccepted: Int { accepted.load(ordering: .relaxed) }
    /// Connections on which `waitForPeerClose` saw the client go away.
    public var connectionsClosedByPeer: Int { peerClosed.load(ordering: .relaxed) }

    public init(_ behaviour: @escaping @Sendable (_ fd: Int32, _ server: RawServer) -> Void) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 128) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else {
            close(fd)
            throw TestClientError("raw server bind failed: errno \(errno)")
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in
            while !stopping.load(ordering: .relaxed) {
                var pfd = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
                guard poll(&pfd, 1, 50) > 0 else { continue }
                let fd = accept(listener, nil, nil)
                guard fd >= 0 else { continue }
                accepted.add(1, ordering: .relaxed)
                Thread { behaviour(fd, self); close(fd) }.start()
            }
            close(listener)
        }
        thread.start()
    }

    public func stop() { stopping.store(true, ordering: .relaxed) }

    /// Reads until the end of a request head (or 5 s); returns what was read.
    @discardableResult
    public static func readHead(_ fd: Int32) -> String {
        String(decoding: readHeadBytes(fd), as: UTF8.self)
    }

    /// The request head's bytes exactly as they arrived (or what came within 5 s).
    public static func readHeadBytes(_ fd: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        let deadline = ContinuousClock.now + .seconds(5)
        var chunk = [UInt8](repeating: 0, count: 4096)
        while ContinuousClock.now < deadline, !bytes.suffix(4).elementsEqual([13, 10, 13, 10]) {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 50) > 0 else { continue }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
        }
        return bytes
    }

    /// Blocks until the client closes the connection (or `limit` passes), counting it.
    public func waitForPeerClose(_ fd: Int32, limit: Duration = .seconds(20)) {
        let deadline = ContinuousClock.now + limit
        var byte: UInt8 = 0
        while ContinuousClock.now < deadline, !stopping.load(ordering: .relaxed) {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 50) > 0 else { continue }
            if recv(fd, &byte, 1, 0) <= 0 {
                peerClosed.add(1, ordering: .relaxed)
                return
            }
        }
    }

    public static func send(_ fd: Int32, _ text: String) {
        var text = text
        text.withUTF8 { _ = Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Closes with a TCP reset instead of an orderly close.
    public static func reset(_ fd: Int32) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
    }
}

/// A loopback port with nothing listening on it, for an origin that cannot be reached.
/// The socket stays bound, never listening, for the rest of the run: connections to the
/// port are refused, and no other test's server or client can take the port meanwhile (a
/// port closed at once was taken under load, and the "unreachable" origin answered).
public func closedPort() -> Int {
    boundLoopbackPort().port
}

/// A loopback port free at the moment of asking, for a server a test starts (which may
/// find it taken by then and must try another).
public func freePort() -> Int {
    let (fd, port) = boundLoopbackPort()
    close(fd)
    return port
}

private func boundLoopbackPort() -> (fd: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            _ = bind(fd, $0, length)
            _ = getsockname(fd, $0, &length)
        }
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}
