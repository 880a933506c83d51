/// The sets of tags the disk index's entries carry, each kept once and referred to by a
/// number: almost every entry carries only its route's name, so a million entries share a
/// handful of sets. Sets and tags are counted (`CountedValues`) and dropped when no entry
/// holds them, so origins that tag every answer differently do not make the index grow
/// without bound.
struct DiskTagSets {
    /// The number of the empty set, which every index entry starts with.
    static let none: UInt32 = 0

    private var tags = CountedValues<String>()
    /// Each set as its tags' numbers, sorted; a set's number here is one less than its own.
    private var sets = CountedValues<[UInt32]>()

    /// How many sets are in use, the empty one included (for tests).
    var count: Int { sets.count + 1 }

    /// The number of `tags`' set, counted as one more use.
    mutating func retain(_ tags: [String]) -> UInt32 {
        guard !tags.isEmpty else { return Self.none }
        let numbers = Set(tags).map { self.tags.retain($0).number }.sorted()
        let (set, inserted) = sets.retain(numbers)
        if !inserted {
            for number in numbers { _ = self.tags.release(number) }  // the set already holds them
        }
        return set + 1
    }

    /// One use of `set` fewer; dropped, with the tags only it held, at none.
    mutating func release(_ set: UInt32) {
        guard set != Self.none, let numbers = sets.release(set - 1) else { return }
        for number in numbers { _ = tags.release(number) }
    }

    /// Which sets (by number) hold any of `wanted`: a purge by tag looks for these.
    func sets(holdingAnyOf wanted: Set<String>) -> Set<UInt32> {
        let numbers = Set(wanted.compactMap { tags.number(of: $0) })
        guard !numbers.isEmpty else { return [] }
        // Each set is sorted: a binary search per wanted tag, not a pass over up to
        // `CacheTags.answerLimit` bytes' worth of tags per set.
        return Set(sets.numbers(where: { set in numbers.contains { Self.sorted(set, holds: $0) } }).map { $0 + 1 })
    }

    private static func sorted(_ set: [UInt32], holds number: UInt32) -> Bool {
        var low = 0, high = set.count
        while low < high {
            let middle = (low + high) / 2
            if set[middle] < number { low = middle + 1 } else { high = middle }
        }
        return low < set.count && set[low] == number
    }
}
