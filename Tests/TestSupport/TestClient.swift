#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Foundation

/// A failure of the test client: a deadline passed, the peer closed, or a call failed.
public struct TestClientError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// One response as read off the wire, unparsed beyond framing.
public struct TestResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
    public func headerValues(_ name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }
    public var text: String { String(decoding: body, as: UTF8.self) }
}

/// A TCP client for tests in which every read has a deadline, so no test can hang on a
/// server that never answers. Reads block a thread of their own, never Swift's cooperative
/// pool, which the server's async handlers need. One task uses a client at a time.
public final class TestClient: @unchecked Sendable {
    public let fd: Int32
    private var buffer: [UInt8] = []
    public var timeout: Duration

    /// `source` binds the client's own address first (another loopback address, 127.0.0.2,
    /// is another client to the server).
    public init(port: Int, host: String = "127.0.0.1", source: String? = nil, timeout: Duration = .seconds(10)) throws {
        self.timeout = timeout
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestClientError("socket: errno \(errno)") }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else { throw TestClientError("bind to \(source): errno \(errno)") }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            // No close here: every stored property is set, so deinit runs and closes `fd`. A
            // second close would hit whatever socket reused the number meanwhile (another
            // test's client), which then saw its connection closed with nothing read.
            throw TestClientError("connect to \(port): errno \(errno)")
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { Glibc.close(fd) }

    /// One GET on a connection of its own, closed when the answer is read.
    public static func get(_ port: Int, _ target: String, headers: String = "") async throws -> TestResponse {
        let client = try TestClient(port: port)
        try client.send("GET \(target) HTTP/1.1\r\nHost: l\r\n\(headers)\r\n")
        return try await client.readResponse()
    }

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw TestClientError("send: errno \(errno)")
            }
            offset += n
        }
    }

    /// `send` on a thread of its own: a large body blocks until the server has read it, and
    /// the pool's few threads must stay free for the servers' handlers and other tests.
    public func sendOffPool(_ bytes: [UInt8]) async throws { try await offPool { try self.send(bytes) } }

    /// Shuts down the write side (the server sees end of input).
    public func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Reads more bytes into the buffer; returns 0 at end of stream. Throws past the deadline.
    @discardableResult
    private func fill(deadline: ContinuousClock.Instant) throws -> Int {
        while true {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { throw TestClientError("read timed out") }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ms = Int32(clamping: remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1)
            let ready = poll(&pfd, 1, ms)
            if ready < 0, errno == EINTR { continue }
            if ready == 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                if errno == ECONNRESET { return 0 }
                throw TestClientError("recv: errno \(errno)")
            }
            buffer.append(contentsOf: chunk[0..<n])
            return n
        }
    }

    /// Runs blocking socket work on a thread of its own: neither Swift's cooperative pool nor
    /// Dispatch's global queues (about one thread per core, shared with the disk tier) may wait on it.
    private func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }

    /// Reads one response. `bodyless` is for answers to HEAD, which carry a length but no body.
    public func readResponse(bodyless: Bool = false) async throws -> TestResponse {
        try await offPool { try self.readResponseBlocking(bodyless: bodyless) }
    }

    private func readResponseBlocking(bodyless: Bool) throws -> TestResponse {
        let deadline = ContinuousClock.now + timeout
        var headEnd: Int?
        while headEnd == nil {
            headEnd = Self.find([13, 10, 13, 10], in: buffer)
            if headEnd == nil, try fill(deadline: deadline) == 0 {
                throw TestClientError("connection closed before a response head (\(buffer.count) bytes buffered)")
            }
        }
        let head = String(decoding: buffer[0..<headEnd!], as: UTF8.self)
        buffer.removeFirst(headEnd! + 4)
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw TestClientError("bad status line: \(head)") }
        let headers = lines.map { line -> (name: String, value: String) in
            let colon = line.firstIndex(of: ":")!
            return (String(line[..<colon]), String(line[line.index(after: colon)...].drop { $0 == " " }))
        }
        var response = TestResponse(status: status, headers: headers, body: [])
        if status == 100 { return response }
        if bodyless || status == 204 || status == 304 { return response }
        if let length = response.header("content-length").flatMap(Int.init) {
            while buffer.count < length {
                if try fill(deadline: deadline) == 0 { throw TestClientError("connection closed mid-body") }
            }
            response.body = Array(buffer[0..<length])
            buffer.removeFirst(length)
        } else if response.header("transfer-encoding")?.lowercased() == "chunked" {
            response.body = try readChunkedBody(deadline: deadline)
        } else {
            while try fill(deadline: deadline) > 0 {}
            response.body = buffer
            buffer = []
        }
        return response
    }

    /// A chunked body, decoded (RFC 9112 §7.1); throws when the connection closes before its
    /// last chunk, as it does when the body was cut short.
    private func readChunkedBody(deadline: ContinuousClock.Instant) throws -> [UInt8] {
        func line() throws -> String {
            while true {
                if let end = Self.find([13, 10], in: buffer) {
                    defer { buffer.removeFirst(end + 2) }
                    return String(decoding: buffer[0..<end], as: UTF8.self)
                }
                if try fill(deadline: deadline) == 0 { throw TestClientError("connection closed mid-body (chunked)") }
            }
        }
        var body: [UInt8] = []
        while true {
            let sizeLine = try line()
            guard let size = Int(sizeLine.prefix { $0 != ";" }, radix: 16) else { throw TestClientError("bad chunk size line: \(sizeLine)") }
            if size == 0 {
                while try !line().isEmpty {}  // trailer fields, up to the empty line
                return body
            }
            while buffer.count < size + 2 {
                if try fill(deadline: deadline) == 0 { throw TestClientError("connection closed mid-body (chunked)") }
            }
            guard buffer[size] == 13, buffer[size + 1] == 10 else { throw TestClientError("a chunk of \(size) bytes not followed by CRLF") }
            body += buffer[0..<size]
            buffer.removeFirst(size + 2)
        }
    }

    /// Reads until at least `count` bytes have arrived in all (none consumed: `readResponse`
    /// still reads them), the server closes, or the timeout passes; returns what arrived.
    public func peek(atLeast count: Int) async throws -> [UInt8] {
        try await offPool {
            let deadline = ContinuousClock.now + self.timeout
            while self.buffer.count < count, try self.fill(deadline: deadline) > 0 {}
            return self.buffer
        }
    }

    /// True when the server closes the connection (end of stream or reset) before the deadline;
    /// any bytes still arriving are kept for `readResponse`.
    public func waitForClose(within duration: Duration) async -> Bool {
        (try? await offPool { self.waitForCloseBlocking(within: duration) }) ?? false
    }

    private func waitForCloseBlocking(within duration: Duration) -> Bool {
        let deadline = ContinuousClock.now + duration
        while true {
            do {
                if try fill(deadline: deadline) == 0 { return true }
            } catch {
                return false
            }
        }
    }

    public var bufferedByteCount: Int { buffer.count }

    /// Whether bytes (or the end of the stream) can be read now, without waiting.
    public func peekAvailable() throws -> Bool {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&pfd, 1, 0)
        guard ready >= 0 else { throw TestClientError("poll: errno \(errno)") }
        return ready > 0
    }

    public static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
            if Array(haystack[i..<(i + needle.count)]) == needle { return i }
        }
        return nil
    }
}

/// Raises the open-file limit to the hard limit, for tests that hold many connections.
public func raiseFileLimit() {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    limit.rlim_cur = limit.rlim_max
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}

/// The value of one series in a Prometheus text scrape (`name{labels}` exactly as written,
/// or a bare name), 0 when it is absent: counters are exported at 0, so a test of an event
/// reads the value, never the series' presence.
public func metricValue(_ series: String, in scrape: String) -> Double {
    for line in scrape.split(separator: "\n") where line.hasPrefix(series + " ") {
        return Double(line.dropFirst(series.count + 1)) ?? 0
    }
    return 0
}

/// `count` bytes of a pattern that repeats every 65,521 bytes (a prime, so no power-of-two
/// offset lines up with it): made by copying blocks, not byte by byte, since tests are built
/// without optimisation and large bodies would otherwise cost seconds of CPU.
public func patternBytes(_ count: Int) -> [UInt8] {
    let block = (0..<65_521).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(count + block.count)
    while bytes.count < count { bytes.append(contentsOf: block) }
    bytes.removeLast(bytes.count - count)
    return bytes
}

/// Whether two byte arrays are equal, compared with `memcmp` (see `patternBytes`).
public func sameBytes<A: Collection, B: Collection>(_ a: A, _ b: B) -> Bool where A.Element == UInt8, B.Element == UInt8 {
    a.withContiguousStorageIfAvailable { x in
        b.withContiguousStorageIfAvailable { y in x.count == y.count && (x.isEmpty || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0) } ?? false
    } ?? false
}
