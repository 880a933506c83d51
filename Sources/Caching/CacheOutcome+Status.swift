public import CacheVocabulary

extension CacheOutcome {
    /// The outcome a `Cache-Status` states.
    public init(_ status: CacheStatus) {
        switch status.result {
        case .hit: self = .hit
        case .miss: self = .miss
        case .stale: self = status.forward == nil ? .stale : .standIn
        }
    }
}
