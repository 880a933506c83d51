#if canImport(Glibc)
import Glibc
#endif

/// Notices that the configuration file was replaced or rewritten, so it is reloaded as on
/// SIGHUP without anyone sending one: kubelet updates a mounted ConfigMap by pointing a
/// symbolic link (`..data`) at a new folder, and an operator's editor rewrites in place.
/// It polls `stat` through the links once a second rather than using inotify, which watches
/// the links' old targets and misses a swap of the folder behind them.
struct ConfigFileWatch: Sendable {
    /// What tells one version of the file from another: the file the path leads to, its size
    /// and when it was last written.
    struct Identity: Equatable, Sendable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modifiedSeconds: Int
        var modifiedNanoseconds: Int
    }

    let path: String
    var interval: Duration = .seconds(1)

    /// The file's identity now, nil while the path leads nowhere (mid-swap, or removed).
    func identity() -> Identity? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
                        modifiedSeconds: info.st_mtim.tv_sec, modifiedNanoseconds: info.st_mtim.tv_nsec)
    }

    /// Calls `changed` each time the file becomes a version not seen before, until cancelled.
    /// A path that leads nowhere for a while changes nothing: the running routes serve on.
    func run(_ changed: @Sendable () async -> Void) async {
        var last = identity()
        while !Task.isCancelled {
            do { try await Task.sleep(for: interval) } catch { return }
            guard let now = identity(), now != last else { continue }
            last = now
            await changed()
        }
    }
}
