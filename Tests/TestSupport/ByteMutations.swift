/// Every one-byte deletion, doubling and replacement (by each of `replacements`) of a body:
/// the inputs decoder tests feed to see that no broken body gets further than a refusal.
public func byteMutations(of original: [UInt8], replacements: [UInt8]) -> [[UInt8]] {
    var mutations: [[UInt8]] = []
    for index in original.indices {
        var removed = original
        removed.remove(at: index)
        mutations.append(removed)
        var doubled = original
        doubled.insert(original[index], at: index)
        mutations.append(doubled)
        for byte in replacements where byte != original[index] {
            var changed = original
            changed[index] = byte
            mutations.append(changed)
        }
    }
    return mutations
}
