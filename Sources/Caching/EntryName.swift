import Crypto
import HTTPCore

/// An entry's file name: the SHA-256 of its key, kept as 32 bytes rather than 64
/// characters, so a large index costs little memory.
struct EntryName: Hashable, Sendable {
    private let words: (UInt64, UInt64, UInt64, UInt64)

    init(_ digest: SHA256.Digest) {
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &words) { target in
            digest.withUnsafeBytes { target.copyMemory(from: $0) }
        }
        self.words = words
    }

    /// The name from its 64 lower-case hex digits, or nil for any other file name.
    init?(hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 32)
        for i in 0..<32 {
            guard let high = Self.nibble(digits[2 * i]), let low = Self.nibble(digits[2 * i + 1]) else { return nil }
            bytes[i] = high << 4 | low
        }
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &words) { $0.copyBytes(from: bytes) }
        self.words = words
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case 0x30...0x39: digit - 0x30
        case 0x61...0x66: digit - 0x61 + 10
        default: nil
        }
    }

    /// Eight bytes of the digest, as uniform as it is (the disk policy's sketch hashes it).
    var firstWord: UInt64 { words.0 }

    var hex: String {
        withUnsafeBytes(of: words) { Hex.string($0) }
    }

    /// `directory/ab/abcd…`: the file under a folder named by its first two digits, written
    /// into one string (every disk read and write asks for it).
    func path(under directory: String) -> String {
        var directory = directory
        return directory.withUTF8 { prefix in
            withUnsafeBytes(of: words) { bytes in
                String(unsafeUninitializedCapacity: prefix.count + 4 + 2 * bytes.count) { text in
                    _ = text.initialize(from: prefix)
                    let folder = prefix.count + 1
                    let file = folder + 3
                    text[folder - 1] = 0x2F
                    _ = Hex.write(UnsafeRawBufferPointer(rebasing: bytes[..<1]), into: UnsafeMutableBufferPointer(rebasing: text[folder...]))
                    text[file - 1] = 0x2F
                    return file + Hex.write(bytes, into: UnsafeMutableBufferPointer(rebasing: text[file...]))
                }
            }
        }
    }

    static func == (a: EntryName, b: EntryName) -> Bool {
        a.words.0 == b.words.0 && a.words.1 == b.words.1 && a.words.2 == b.words.2 && a.words.3 == b.words.3
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
    }
}
