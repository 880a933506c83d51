/// What the shared tier needs of the store every replica reaches (Redis, in Larder): values
/// with an expiry, sets of names beside them, a lock that expires, and one broadcast channel.
/// The engine sees only this, so `Caching` stays free of sockets; any thrown error means
/// "the store could not be asked", and the engine then works on its own tiers.
public protocol SharedStore: Sendable {
    /// The value at `key`, nil when there is none; at most its first `limit` + 1 bytes, so a
    /// value longer than `limit` is seen to be so without being read whole.
    func value(at key: String, limit: Int) async throws -> [UInt8]?
    /// Stores `value` at `key` for `expiry`, and adds `member` to each set in `sets`, which
    /// live at least as long.
    func store(_ value: [UInt8], at key: String, expiry: Duration, member: String, sets: [String]) async throws
    /// Takes the lock at `key` for `expiry` unless someone holds it (true when taken), and
    /// reads the value at `reading` in the same round trip (as `value(at:limit:)` does).
    func lock(_ key: String, token: String, expiry: Duration, reading: String, limit: Int) async throws -> (taken: Bool, value: [UInt8]?)
    /// Frees the lock when `token` still holds it, then publishes `message`.
    func unlock(_ key: String, token: String, publishing message: [UInt8]) async throws
    /// The members of these sets.
    func members(of sets: [String]) async throws -> [String]
    /// Every key starting with `prefix` (purging everything; not for the request path).
    func keys(withPrefix prefix: String) async throws -> [String]
    /// Removes the keys; for each, whether it was there.
    func remove(_ keys: [String]) async throws -> [Bool]
    /// Sends `message` to every replica's subscriber (this one's too).
    func publish(_ message: [UInt8]) async throws
}

/// The store answered and refused (Redis's `-OOM`, `-READONLY`): unlike a store that cannot
/// be reached, it is up and says no, which only its refusals show.
public struct SharedStoreRefusal: Error, CustomStringConvertible {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}
