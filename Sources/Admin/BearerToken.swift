import HTTPCore
/// The admin listener's credential. A presented token is compared in time that depends
/// only on the lengths, never on where the first differing byte is, so timing the answers
/// cannot reveal the token a byte at a time.
public struct BearerToken: Sendable {
    private let bytes: [UInt8]

    public init(_ token: String) { bytes = Array(token.utf8) }

    func matches(_ presented: some StringProtocol) -> Bool {
        let given = Array(presented.utf8)
        // Every byte of the longer of the two is visited; differences are OR-ed, never branched on.
        var difference = UInt8(truncatingIfNeeded: given.count ^ bytes.count) | (given.count == bytes.count ? 0 : 1)
        for i in 0..<max(given.count, bytes.count) {
            let a = i < given.count ? given[i] : 0
            let b = i < bytes.count ? bytes[i] : 0
            difference |= a ^ b
        }
        return difference == 0
    }

    /// What `Authorization` says: no bearer token, the right one, or another.
    enum Check: Equatable { case missing, wrong, right }

    func check(authorization: String?) -> Check {
        guard let authorization else { return .missing }
        let parts = authorization.trimmingOWS().split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return .missing }
        return matches(parts[1].trimmingOWS()) ? .right : .wrong
    }
}
