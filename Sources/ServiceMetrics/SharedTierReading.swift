/// What `/metrics` shows of the shared tier (Redis): its running totals and whether it is
/// usable now. Read where the tiers are composed, so the metrics need not know Redis.
public struct SharedTierReading: Sendable {
    public let stores: Int
    public let errors: Int
    public let waits: Int
    public let corruptions: Int
    public let isUp: Bool

    public init(stores: Int, errors: Int, waits: Int, corruptions: Int, isUp: Bool) {
        self.stores = stores
        self.errors = errors
        self.waits = waits
        self.corruptions = corruptions
        self.isUp = isUp
    }
}
