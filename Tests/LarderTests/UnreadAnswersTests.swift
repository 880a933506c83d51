#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import TestSupport
import Bodies

/// Clients that ask and never read what they are sent: whatever their number, a real
/// `larder serve` stays within its memory limit + 96 MiB. Answers waiting for them share the
/// stored bytes, and output waiting across all connections has a bound of its own.
@Suite(.serialized, .timeLimit(.minutes(2))) struct UnreadAnswersTests {
    /// A connection whose receive buffer is small (so the kernel takes little of an answer
    /// off Larder's hands) and whose sends never block.
    private static func idleReader(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var small: Int32 = 4096
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw TestClientError("connect failed: errno \(errno)") }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    /// Sends what the socket takes of `bytes` now, and no more.
    private static func sendWhatFits(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return }
            offset += n
        }
    }

    private static func peakRSS(of larder: LarderProcess, over duration: Duration) async throws -> Int {
        var peak = 0
        let end = ContinuousClock.now + duration
        while ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(100))
            peak = max(peak, FaultSuiteTests.residentMiB(larder.pid))
        }
        return peak
    }

    /// 100 clients each ask for one stored 8 MB answer and read nothing: before, each
    /// connection held its own copy of what the kernel had not taken (400 MB and more).
    @Test(.disabled(if: underSanitizer, "a sanitizer's shadow memory and quarantine are not Larder's"))
    func clientsThatNeverReadShareOneStoredBody() async throws {
        raiseFileLimit()
        let origin = try FaultSuiteTests.blobOrigin()
        defer { Task { await origin.stop() } }
        let (larder, port) = try await FaultSuiteTests.larder(origin, cacheDirectory: FaultSuiteTests.freshDirectory(),
                                                              ["--memory-limit", "16MiB"])
        defer { larder.signal(SIGKILL) }
        let target = "/b/blob/1?size=8000000"
        #expect(try await TestClient.get(port, target).body.count == 8_000_000)
        var clients: [Int32] = []
        defer { clients.forEach { close($0) } }
        for _ in 0..<100 {
            let fd = try Self.idleReader(port: port)
            clients.append(fd)
            Self.sendWhatFits(fd, Array("GET \(target) HTTP/1.1\r\nHost: l\r\n\r\n".utf8))
        }
        let peak = try await Self.peakRSS(of: larder, over: .seconds(2))
        #expect(peak > 0 && peak < 16 + 96, "peak RSS \(peak) MiB with 100 unread 8 MB answers")
        // Still serving others meanwhile.
        #expect(try await TestClient.get(port, "/livez").status == 200)
    }

    /// 300 clients each pipeline 4,000 requests for a stored 1 KB answer and read nothing:
    /// before, each held about 2 MiB (input read ahead and output to its own bound).
    @Test(.disabled(if: underSanitizer, "a sanitizer's shadow memory and quarantine are not Larder's"))
    func pipelinedRequestsThatAreNeverReadStayWithinTheBound() async throws {
        raiseFileLimit()
        let origin = try FaultSuiteTests.blobOrigin()
        defer { Task { await origin.stop() } }
        let (larder, port) = try await FaultSuiteTests.larder(origin, cacheDirectory: FaultSuiteTests.freshDirectory(),
                                                              ["--memory-limit", "16MiB"])
        defer { larder.signal(SIGKILL) }
        #expect(try await TestClient.get(port, "/b/blob/2").body.count == 1000)
        let requests = Array(String(repeating: "GET /b/blob/2 HTTP/1.1\r\nHost: l\r\n\r\n", count: 4000).utf8)
        var clients: [Int32] = []
        defer { clients.forEach { close($0) } }
        for _ in 0..<300 {
            let fd = try Self.idleReader(port: port)
            clients.append(fd)
            Self.sendWhatFits(fd, requests)
        }
        let peak = try await Self.peakRSS(of: larder, over: .seconds(3))
        #expect(peak > 0 && peak < 16 + 96, "peak RSS \(peak) MiB with 300 pipelining clients that never read")
        // Others are still served promptly: each connection answers a share of its requests
        // per turn of its loop, then the next connection gets its turn.
        let asked = ContinuousClock.now
        #expect(try await TestClient.get(port, "/metrics").status == 200)
        // A bound on a stall, not a pace: 9.3 s once in a loaded full run.
        #expect(ContinuousClock.now - asked < .seconds(30))
    }
}
