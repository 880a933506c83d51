#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Larder
import Logging
import Observability
import Settings
import Simulator

/// Memory hits through the whole server in this process (`larder serve --demo` on port 0,
/// requests over one keep-alive loopback connection), so `valgrind --tool=callgrind
/// --toggle-collect='*EventLoopC3run*'` can count the instructions the event loop spends
/// per hit: run it twice with different counts and divide the difference (what start-up
/// and warm-up cost cancels out). Valgrind cannot run a process whose main thread sits in
/// `dispatch_main`, which is why `larder-bench` has a synchronous main.
///
/// `miss-path` does the same with a new place in every request, fetched from a simulator
/// running in a process of its own (`larder upstream-sim --latency 0`), so its loop is
/// not counted: the instructions of a miss, from the request to the stored answer.
///
/// `pass-through-miss-path` does the same through a pass-through route (`/storm` to the
/// origin given, which any path of answers 200), a new path in every request: the miss a
/// gateway's storm is made of, with no upstream format to decode.
///
/// `disk-hit-path` fetches 200 places, waits until they are on disk, then asks for them in
/// turn through a memory tier too small to keep them: every counted request is a disk hit.
enum HitPath {
    static func run(requests: Int, logLevel: String, missesFrom simulator: String? = nil, passThroughTo origin: String? = nil,
                    fromDisk: Bool = false) throws {
        var flags = ["port": "0", "log.level": logLevel, "cache.dir": NSTemporaryDirectory() + "larder-hit-path-\(getpid())"]
        if fromDisk { flags["memory.limit"] = "16KiB" }
        if let origin { flags["routes"] = "/storm=\(origin)" }
        if let simulator {
            flags["weather.url"] = simulator + "/v1/forecast"
            flags["balance.url"] = simulator + "/balance"
        } else {
            flags["demo"] = "true"
        }
        var settings = try ServeSettings.resolve(flags: flags, environment: [:])
        LogOutput.bootstrap(level: settings.logLevel, format: settings.logFormat)
        // Kept running until the process exits, like the service.
        let demo = settings.demo ? try DemoUpstreams.start(for: &settings, logger: Logger(label: "larder")) : nil
        defer { withExtendedLifetime(demo) {} }
        let service = LarderService(settings: settings)
        try service.start()
        guard let port = service.server?.port else { fatalError("no port") }
        let client = try LoopbackClient(port: port)
        func request(_ target: String) -> [UInt8] {
            Array("GET \(target) HTTP/1.1\r\nHost: bench\r\nUser-Agent: wrk\r\n\r\n".utf8)
        }
        if origin != nil {
            for i in 0..<(requests + 1) {
                try client.exchange(request("/storm/\(i)"))
            }
            print("pass-through miss path: \(requests) misses through 127.0.0.1:\(port), log level \(logLevel)")
            return
        }
        if fromDisk {
            let places = (0..<200).map { request("/weather?lat=\(10 + $0 / 100).\(String($0 % 100 + 100).dropFirst())&lon=13.41") }
            for place in places { try client.exchange(place) }
            blocking { await service.waitForDiskWrites() }
            for i in 0..<requests { try client.exchange(places[i % places.count]) }
            print("disk hit path: \(requests) disk hits through 127.0.0.1:\(port), log level \(logLevel)")
            return
        }
        guard simulator != nil else {
            // The first asks the simulator; the rest are memory hits.
            let hot = request("/weather?lat=52.52&lon=13.41")
            for _ in 0..<(requests + 1) { try client.exchange(hot) }
            print("hit path: \(requests) memory hits through 127.0.0.1:\(port), log level \(logLevel)")
            return
        }
        // Evicting every cache between misses (LARDER_BENCH_EVICT=MiB written by this thread,
        // outside the counted loop) makes callgrind's cache simulation count a cold miss.
        var evict = [UInt8](repeating: 0, count: (Int(ProcessInfo.processInfo.environment["LARDER_BENCH_EVICT"] ?? "") ?? 0) << 20)
        for i in 0..<(requests + 1) {
            try client.exchange(request("/weather?lat=\(-80 + i / 100).\(String(i % 100 + 100).dropFirst())&lon=13.41"))
            for j in stride(from: 0, to: evict.count, by: 64) { evict[j] &+= 1 }
        }
        print("miss path: \(requests) misses through 127.0.0.1:\(port), log level \(logLevel)")
    }
}

/// One keep-alive connection that sends a request and reads its whole response (head,
/// then `Content-Length` bytes), with a receive deadline.
private final class LoopbackClient {
    let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)

    struct Failure: Error { let what: String }

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure(what: "connect: errno \(errno)") }
    }

    deinit { close(fd) }

    func exchange(_ request: [UInt8]) throws {
        guard send(fd, request, request.count, 0) == request.count else { throw Failure(what: "send") }
        var received: [UInt8] = []
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else { throw Failure(what: "recv: \(n) errno \(errno)") }
            received.append(contentsOf: buffer[0..<n])
            if let end = Self.headEnd(received), received.count >= end + Self.contentLength(received[..<end]) { return }
        }
    }

    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i + 4
        }
        return nil
    }

    /// Read from the bytes: a Foundation string search here cost more instructions than
    /// the miss it waited for, and `miss-path` counts the whole process.
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
        return 0
    }
}
