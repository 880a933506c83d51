/// What a value really costs in memory, counted the way the allocator hands it out: each
/// heap object pays malloc's header and 16-byte rounding, each array and string its header.
/// Small entries are mostly overhead, so a byte budget that counts only bodies would let
/// the memory tier grow to several times its limit.
public enum MemoryCost {
    /// One heap allocation of `bytes`, with malloc's 16-byte header and rounding.
    public static func allocation(_ bytes: Int) -> Int { (bytes + 16 + 15) / 16 * 16 }

    /// A native string's storage: nothing when it fits inline (15 UTF-8 bytes or fewer).
    public static func string(_ text: String) -> Int {
        let count = text.utf8.count
        return count <= 15 ? 0 : allocation(32 + count + 1)
    }

    /// An array's storage of `bytes` bytes of elements (nothing when empty: it is shared).
    public static func array(bytes: Int) -> Int { bytes == 0 ? 0 : allocation(32 + bytes) }
}
