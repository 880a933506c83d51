#if canImport(Glibc)
import Glibc
#endif

/// Mounts a size-limited tmpfs (a disk that fills up) at `path`; false when not permitted.
public func mountTmpfs(at path: String, size: String) -> Bool {
    mount("tmpfs", path, "tmpfs", 0, "size=\(size)") == 0
}

/// Unmounts a tmpfs mounted for a test, detached (`MNT_DETACH`): a plain `umount` fails
/// with EBUSY while anything still holds the mount (a file left open, a child process still
/// stopping), and the tmpfs stays mounted after the test; detached, it is gone from the
/// tree at once and freed when the last holder lets go.
public func unmountTmpfs(at path: String) {
    umount2(path, Int32(MNT_DETACH))
}
