import Synchronization

/// Names for the temporary files a disk write goes through before its rename: unique in
/// the process by a counter, and across processes sharing a cache directory by a random
/// prefix (and `O_EXCL` refuses a clash all the same). A UUID per write read
/// `/dev/urandom` each time: three system calls per write for nothing.
final class TemporaryNames: Sendable {
    private let prefix = String(UInt64.random(in: .min ... .max), radix: 16)
    private let counter = Atomic<UInt64>(0)

    func next() -> String {
        "\(prefix)-\(counter.add(1, ordering: .relaxed).newValue)"
    }
}
