#if canImport(Glibc)
import Glibc
#endif
import HTTPServer
import Upstream

/// Per-fetch overhead of the libcurl client over loopback: the median of N sequential
/// fetches through `UpstreamClient` against the same zero-latency server reached through
/// a raw keep-alive socket, the floor any client pays.
enum UpstreamOverhead {
    static func run(count: Int, url external: String? = nil) async throws {
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.eventLoops = 1
        var router = Router()
        router.get("/zero") { _ in .now(HTTPResponse(status: 200, body: "{\"balance\":1234.56}")) }
        let server = HTTPServer(configuration: configuration, handler: router.handler)
        try server.start()
        let port = server.port!

        let raw = try rawSocketTimes(port: port, count: count)
        let client = UpstreamClient()
        var curl: [Double] = []
        for _ in 0..<count {
            let start = ContinuousClock.now
            _ = try await client.fetch(UpstreamRequest(url: external ?? "http://127.0.0.1:\(port)/zero"))
            curl.append(microseconds(ContinuousClock.now - start))
        }
        await client.shutdown()
        await server.shutdown()

        print("upstream fetch overhead, \(count) sequential requests over loopback (µs)")
        print("  raw keep-alive socket   p50 \(format(percentile(raw, 0.5)))  p99 \(format(percentile(raw, 0.99)))")
        print("  UpstreamClient.fetch    p50 \(format(percentile(curl, 0.5)))  p99 \(format(percentile(curl, 0.99)))")
        print("  overhead per fetch      p50 \(format(percentile(curl, 0.5) - percentile(raw, 0.5)))")
    }

    /// Round trips on one blocking keep-alive socket: write a request, read until the body ends.
    private static func rawSocketTimes(port: Int, count: Int) throws -> [Double] {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw BenchError("connect failed: errno \(errno)") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let request = Array("GET /zero HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: raw\r\nAccept: */*\r\n\r\n".utf8)
        var buffer = [UInt8](repeating: 0, count: 4096)
        var times: [Double] = []
        for _ in 0..<count {
            let start = ContinuousClock.now
            _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            var received: [UInt8] = []
            while !received.suffix(19).elementsEqual("{\"balance\":1234.56}".utf8) {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { throw BenchError("recv failed: errno \(errno)") }
                received.append(contentsOf: buffer[0..<n])
            }
            times.append(microseconds(ContinuousClock.now - start))
        }
        return times
    }
}

func microseconds(_ d: Duration) -> Double {
    Double(d.components.seconds) * 1e6 + Double(d.components.attoseconds) / 1e12
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

func format(_ value: Double) -> String {
    String(Int((value * 10).rounded())).withDecimalPoint
}

extension String {
    /// "123" (tenths) → "12.3".
    fileprivate var withDecimalPoint: String {
        let negative = hasPrefix("-")
        var digits = negative ? String(dropFirst()) : self
        while digits.count < 2 { digits = "0" + digits }
        return (negative ? "-" : "") + digits.dropLast() + "." + digits.suffix(1)
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
