#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A pipe whose write end stands for standard output and whose read end the test drains,
/// with a deadline.
public final class OutputPipe {
    public let read: Int32, write: Int32
    public init() {
        var fds: [Int32] = [0, 0]
        _ = pipe(&fds)
        (read, write) = (fds[0], fds[1])
        _ = fcntl(read, F_SETFL, O_NONBLOCK)
    }
    deinit { close(read); close(write) }

    /// Everything readable until `until` holds for what was read, or 10 s passed.
    public func text(until done: (String) -> Bool) -> String {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let n = Glibc.read(read, &chunk, chunk.count)
            if n > 0 {
                bytes += chunk[0..<n]
                if done(String(decoding: bytes, as: UTF8.self)) { break }
            } else {
                usleep(2000)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// What is in the pipe now.
    public func available() -> String {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while case let n = Glibc.read(read, &chunk, chunk.count), n > 0 { bytes += chunk[0..<n] }
        return String(decoding: bytes, as: UTF8.self)
    }
}
