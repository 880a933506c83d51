#if canImport(Glibc)
import Glibc
#endif

/// A file with no name that holds one answer too large to keep in memory: the upstream
/// client writes it as the answer arrives, connections send regions of it with `sendfile`,
/// and it is gone from the disk when the last of them lets go (or the process ends), so a
/// crash leaves nothing to clean up.
public final class SpoolFile: Sendable {
    public let descriptor: Int32

    /// A new, empty file in `directory`: unnamed (`O_TMPFILE`) where the file system allows,
    /// else made with a unique name and unlinked at once. Nil when neither works.
    public init?(in directory: String) {
        var fd = open(directory, Self.unnamed | O_RDWR | O_CLOEXEC, 0o600)
        if fd < 0 {
            var template = Array((directory.hasSuffix("/") ? directory : directory + "/").utf8CString.dropLast()) + Array("larder-spool-XXXXXX".utf8CString)
            fd = mkstemp(&template)
            if fd >= 0 {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
            }
        }
        guard fd >= 0 else { return nil }
        descriptor = fd
    }

    /// Linux's `O_TMPFILE` (`__O_TMPFILE | O_DIRECTORY`), a macro Swift does not import.
    private static let unnamed: Int32 = 0o20000000 | O_DIRECTORY

    /// Writes all of `bytes` at `offset`. False when the disk refused (full, or failing).
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Bool {
        var done = 0
        while done < bytes.count {
            let n = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }

    deinit { close(descriptor) }
}
