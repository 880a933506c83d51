import Synchronization
import Locking

/// The disk space spool files may take between them: what answers being fetched hold in the
/// cache directory counts against the disk budget, as the entries they become will. A
/// transfer takes room a step at a time as its file grows (`BodyFile.reserve`) and gives it
/// back when the file closes or becomes an entry. Past the limit an answer is read at its
/// client's pace (`BodyStream.pace`) and not stored; one that must be taken whole fails.
public final class SpoolRoom: Sendable {
    public let limit: Int
    private let used = Locked(0)
    /// Told each time the room taken grows (the disk tier evicts entries to make room for it).
    private let grown = Locked<(@Sendable (Int) -> Void)?>(nil)

    /// Room is taken this much at a time.
    public static let step = 1 << 20

    public init(limit: Int) {
        self.limit = limit
    }

    /// Bytes taken now.
    public var taken: Int { used.withLock { $0 } }

    /// Calls `hook` with the bytes taken each time that grows.
    public func whenGrown(_ hook: @escaping @Sendable (Int) -> Void) {
        grown.withLock { $0 = hook }
    }

    /// Takes `bytes`; false, and nothing taken, when that would pass the limit.
    public func take(_ bytes: Int) -> Bool {
        let now: Int? = used.withLock { used in
            guard used + bytes <= limit else { return nil }
            used += bytes
            return used
        }
        guard let now else { return false }
        grown.withLock { $0 }?(now)
        return true
    }

    public func give(_ bytes: Int) {
        guard bytes > 0 else { return }
        used.withLock { $0 -= bytes }
    }
}
