/// The sets of tags the disk index's entries carry, each kept once and referred to by a
/// number: almost every entry carries only its route's name, so a million entries share a
/// handful of sets. Sets and tags are counted and freed when no entry refers to them, so
/// origins that tag every answer differently do not make the index grow without bound.
struct DiskTagSets {
    /// The number of the empty set, which every index entry starts with.
    static let none: UInt32 = 0

    private var tags: [String] = []
    private var tagNumbers: [String: UInt32] = [:]
    private var tagUses: [Int] = []
    private var freeTags: [UInt32] = []

    private var sets: [[UInt32]] = [[]]
    private var setNumbers: [[UInt32]: UInt32] = [[]: 0]
    private var setUses: [Int] = [0]
    private var freeSets: [UInt32] = []

    /// How many sets are in use, the empty one included (for tests).
    var count: Int { setNumbers.count }

    /// The number of `tags`' set, counted as one more use.
    mutating func retain(_ tags: [String]) -> UInt32 {
        guard !tags.isEmpty else { return Self.none }
        var numbers: [UInt32] = []
        for tag in Set(tags) { numbers.append(tagNumber(tag)) }
        numbers.sort()
        if let set = setNumbers[numbers] {
            setUses[Int(set)] += 1
            for number in numbers { release(tag: number) }  // the set already holds them
            return set
        }
        let set: UInt32
        if let free = freeSets.popLast() {
            set = free
            sets[Int(set)] = numbers
            setUses[Int(set)] = 1
        } else {
            set = UInt32(sets.count)
            sets.append(numbers)
            setUses.append(1)
        }
        setNumbers[numbers] = set
        return set
    }

    /// One use of `set` fewer; freed, with the tags only it held, at none.
    mutating func release(_ set: UInt32) {
        guard set != Self.none else { return }
        setUses[Int(set)] -= 1
        guard setUses[Int(set)] == 0 else { return }
        let numbers = sets[Int(set)]
        setNumbers[numbers] = nil
        sets[Int(set)] = []
        freeSets.append(set)
        for number in numbers { release(tag: number) }
    }

    /// The tags of `set`.
    func tags(of set: UInt32) -> [String] { sets[Int(set)].map { tags[Int($0)] } }

    /// Which sets (by number) hold any of `wanted`: a purge by tag looks for these.
    func sets(holdingAnyOf wanted: Set<String>) -> Set<UInt32> {
        let numbers = Set(wanted.compactMap { tagNumbers[$0] })
        guard !numbers.isEmpty else { return [] }
        return Set(setNumbers.compactMap { set, number in set.contains(where: numbers.contains) ? number : nil })
    }

    /// A tag's number, counted as one more use (a set holds each of its tags once).
    private mutating func tagNumber(_ tag: String) -> UInt32 {
        if let number = tagNumbers[tag] {
            tagUses[Int(number)] += 1
            return number
        }
        let number: UInt32
        if let free = freeTags.popLast() {
            number = free
            tags[Int(number)] = tag
            tagUses[Int(number)] = 1
        } else {
            number = UInt32(tags.count)
            tags.append(tag)
            tagUses.append(1)
        }
        tagNumbers[tag] = number
        return number
    }

    private mutating func release(tag number: UInt32) {
        tagUses[Int(number)] -= 1
        guard tagUses[Int(number)] == 0 else { return }
        tagNumbers[tags[Int(number)]] = nil
        tags[Int(number)] = ""
        freeTags.append(number)
    }
}
