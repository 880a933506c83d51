#if canImport(Glibc)
import Glibc
#endif

/// One keep-alive connection that sends a request and reads its whole response (the head,
/// then `Content-Length` bytes or chunks to the last), with a receive deadline. It keeps
/// the head only and counts the body's bytes, so a 16 MiB relay costs its thread no copies.
final class LoopbackClient {
    let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)

    struct Failure: Error { let what: String }

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure(what: "connect: errno \(errno)") }
    }

    deinit { close(fd) }

    /// Sends `request` and reads its response; returns the response's status.
    @discardableResult
    func exchange(_ request: [UInt8]) throws -> Int {
        guard send(fd, request, request.count, 0) == request.count else { throw Failure(what: "send") }
        var head: [UInt8] = []
        var status: Int?
        var remaining = 0  // body bytes still to come, or -1: chunked, read to the last chunk
        var tail: [UInt8] = []
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else { throw Failure(what: "recv: \(n) errno \(errno)") }
            var body = buffer[0..<n]
            if status == nil {
                head.append(contentsOf: body)
                guard let end = Self.headEnd(head) else { continue }
                body = head[end...]
                status = Self.status(head)
                remaining = status == 304 || status == 204 ? 0 : Self.contentLength(head[..<end])
            }
            if remaining >= 0 {
                remaining -= body.count
                if remaining <= 0 { return status ?? 0 }
            } else {
                tail = Array((tail + body).suffix(5))
                if tail == Self.lastChunk { return status ?? 0 }
            }
        }
    }

    private static let lastChunk = Array("0\r\n\r\n".utf8)

    private static func status(_ head: [UInt8]) -> Int {
        head.dropFirst(9).prefix(3).reduce(0) { $0 * 10 + Int($1) - 48 }
    }

    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i + 4
        }
        return nil
    }

    /// Read from the bytes (a Foundation string search here cost more instructions than the
    /// miss it waited for); -1 when the head has no `Content-Length` (a chunked answer).
    private static func contentLength(_ head: ArraySlice<UInt8>) -> Int {
        let name = Array("content-length:".utf8)
        var i = head.startIndex
        while i + name.count <= head.endIndex {
            if zip(head[i..<(i + name.count)], name).allSatisfy({ $0 | 0x20 == $1 | 0x20 }) {
                var value = 0
                for byte in head[(i + name.count)...].drop(while: { $0 == 32 }).prefix(while: { (48...57).contains($0) }) {
                    value = value * 10 + Int(byte - 48)
                }
                return value
            }
            i += 1
        }
        return -1
    }
}
