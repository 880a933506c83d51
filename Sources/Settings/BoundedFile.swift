#if canImport(Glibc)
import Glibc
#endif

/// Reads a file Larder's settings name (a configuration file, a value file of `set-fields`)
/// with bounds on what it reads and how long it waits: the path may name a huge file,
/// `/dev/zero`, or a FIFO whose writer sends nothing, and a reload must neither fill memory
/// nor hang on it. Opened without blocking: a FIFO without a writer does not hold it up.
enum BoundedFile {
    /// The most bytes read from such a file: one more than this refuses it.
    static let sizeLimit = 1 << 20
    /// How long a read waits for bytes that do not come (a FIFO or device).
    static let waitLimit = Duration.seconds(5)

    /// The file's bytes, or why it cannot be had: unreadable, larger than `sizeLimit`, or not
    /// all there within `waitLimit`.
    static func read(_ path: String) -> Result<[UInt8], Refusal> {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return .failure(.unreadable(String(cString: strerror(errno)))) }
        defer { close(fd) }
        var status = stat()
        let isFIFO = fstat(fd, &status) == 0 && status.st_mode & S_IFMT == S_IFIFO
        let deadline = ContinuousClock.now + waitLimit
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        // At most the limit and one byte more: that byte says the file is too large.
        while bytes.count <= sizeLimit {
            let wanted = min(chunk.count, sizeLimit + 1 - bytes.count)
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, wanted) }
            if count > 0 {
                bytes += chunk[..<count]
                continue
            }
            // A FIFO without a writer reads as empty: not an empty file, whose settings are
            // all defaults (a reload would drop every route).
            if count == 0 { return isFIFO && bytes.isEmpty ? .failure(.unreadable("a FIFO nothing was written to")) : .success(bytes) }
            if errno == EINTR { continue }
            guard errno == EAGAIN || errno == EWOULDBLOCK else { return .failure(.unreadable(String(cString: strerror(errno)))) }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return .failure(.tooSlow) }
            var wait = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&wait, 1, Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1))
        }
        return .failure(.tooLarge)
    }

    enum Refusal: Error {
        case unreadable(String)
        case tooLarge
        case tooSlow

        /// As a problem says it, after the file's path.
        var reason: String {
            switch self {
            case .unreadable(let why): "cannot be read (\(why))"
            case .tooLarge: "larger than 1 MiB (1,048,576 bytes), the most Larder reads of a file its settings name"
            case .tooSlow: "did not arrive within \(BoundedFile.waitLimit.components.seconds) s (a FIFO or device whose writer sent too little)"
            }
        }
    }
}
