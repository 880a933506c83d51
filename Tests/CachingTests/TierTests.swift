import Foundation
import Testing
@testable import Caching
import Bodies

@Suite(.timeLimit(.minutes(1))) struct MemoryTierTests {
    private func item(_ size: Int) -> MemoryTier.Item {
        let stored = entry([], body: String(repeating: "x", count: size))
        return .response(StoredResponse(entry: stored, rendered: .plain(stored)))
    }

    /// Frequency first (`AdmissionPolicy`): a newcomer pushes an entry out only when it was
    /// asked more often; among the entries it may push out, the least recently used goes.
    @Test func evictsWhatIsAskedLeastPastTheByteBudget() {
        let one = MemoryTier.cost(of: item(1000), key: "a")
        let memory = MemoryTier(budget: one * 3, seed: 1)
        memory.set("a", item(1000))
        memory.set("b", item(1000))
        memory.set("c", item(1000))
        _ = memory.get("a")  // a is asked again; b is now the least recently used
        #expect(memory.set("d", item(1000)) == false, "asked no more often than what it would push out")
        #expect(memory.rejections == 1 && memory.evictions == 0)
        #expect(memory.set("d", item(1000)), "asked again (a miss offers it each time), and now more than b")
        #expect(memory.get("b") == nil)
        #expect(memory.get("a") != nil && memory.get("c") != nil && memory.get("d") != nil)
        #expect(memory.bytes <= memory.budget)
        #expect(memory.evictions == 1)
    }

    @Test func replacingAnItemKeepsTheAccountingRight() {
        let memory = MemoryTier(budget: 100_000)
        memory.set("a", item(1000))
        memory.set("a", item(2000))
        #expect(memory.count == 1)
        #expect(memory.bytes == MemoryTier.cost(of: item(2000), key: "a"))
        memory.remove("a")
        #expect(memory.bytes == 0 && memory.count == 0)
    }

    @Test func anItemLargerThanTheBudgetIsNotKept() {
        let memory = MemoryTier(budget: 500)
        memory.set("big", item(10_000))
        #expect(memory.get("big") == nil)
        #expect(memory.bytes == 0)
    }

    /// The policy's lists are linked by index and freed slots are reused: through a long mix
    /// of every operation, what the tier holds is always something set and not removed since,
    /// at the cost it was set with, found by `get` exactly when held, and the byte count is
    /// exactly theirs. (Which entries a full tier keeps is the policy's: see `AdmissionPolicyTests`;
    /// before it, this compared with a plain LRU list.)
    @Test func aMixOfEveryOperationKeepsTheAccountingExact() {
        let sizes = [40, 300, 1000, 2500]
        let budget = 12 * MemoryTier.cost(of: item(300), key: "k00")
        let memory = MemoryTier(budget: budget, seed: 18)
        var settable: [CacheKey: Int] = [:]  // what the tier may hold: set since its last removal, with its cost
        var random = SeededRandom(seed: 18)
        var kept = 0
        for step in 0..<4000 {
            let key = CacheKey(stringLiteral: "k\(random.below(40))")
            let held = Set(memory.items { _, _ in true }.map(\.key))
            switch random.below(10) {
            case 0..<4:
                let size = sizes[random.below(sizes.count)]
                let cost = MemoryTier.cost(of: item(size), key: key)
                if memory.set(key, item(size)) {
                    settable[key] = cost
                    kept += 1
                    #expect(memory.items { held, _ in held == key }.count == 1, "step \(step): kept \(key)")
                } else {
                    settable[key] = nil
                }
            case 4..<8:
                #expect((memory.get(key) != nil) == held.contains(key), "step \(step): get \(key)")
            case 8:
                memory.remove(key)
                settable[key] = nil
                #expect(memory.items { held, _ in held == key }.isEmpty, "step \(step): removed \(key)")
            default:
                let digit = Character(String(random.below(10)))
                _ = memory.removeAll { key, _ in key.text.last == digit }
                settable = settable.filter { $0.key.text.last != digit }
            }
            let now = Set(memory.items { _, _ in true }.map(\.key))
            #expect(now.isSubset(of: Set(settable.keys)) && memory.count == now.count, "step \(step)")
            #expect(memory.bytes == now.reduce(0) { $0 + settable[$1]! }, "step \(step)")
            #expect(memory.bytes <= budget, "step \(step)")
        }
        #expect(kept > 400 && memory.evictions + memory.rejections > 100, "\(memory.evictions) \(memory.rejections): the mix did fill the tier and push entries out")
    }

    @Test func manyThreadsAtOnceLeaveItConsistent() async {
        let memory = MemoryTier(budget: 50 * MemoryTier.cost(of: item(100), key: "k000"))
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for i in 0..<2000 {
                        memory.set("k\((worker * 31 + i) % 200)", self.item(100))
                        _ = memory.get("k\(i % 200)")
                    }
                }
            }
        }
        #expect(memory.bytes <= memory.budget)
        #expect(memory.count <= 50)
    }
}

/// SplitMix64: the same sequence on every run, so a failing step can be looked at again.
struct SeededRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func below(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(bound))
    }
}

@Suite(.timeLimit(.minutes(1))) struct DiskTierTests {
    private let sample = entry([("ETag", "\"a\""), ("Cache-Control", "max-age=60"), ("X-Repeat", "1"), ("X-Repeat", "2")],
                               requested: 10, received: 11.5, body: "{\"temperature\":3.2}")

    @Test func entriesSurviveANewInstanceOverTheSameDirectory() async throws {
        let directory = temporaryDirectory()
        let first = try DiskTier(directory: directory, budget: 1 << 20)
        first.write("weather:52.52,13.41", sample)
        await first.waitForWrites()

        let second = try DiskTier(directory: directory, budget: 1 << 20)
        let read = await second.read("weather:52.52,13.41")
        #expect(read == sample)
        await second.waitForIndex()
        #expect(second.count == 1)
        #expect(read?.headers.filter { $0.name == "X-Repeat" }.map(\.value) == ["1", "2"])
        #expect(await second.read("weather:0,0") == nil)
    }

    @Test func filesAreNamedBySHA256InTwoCharacterFolders() async throws {
        let directory = temporaryDirectory()
        let disk = try DiskTier(directory: directory, budget: 1 << 20)
        disk.write("balance", sample)
        await disk.waitForWrites()
        // SHA-256 of the key's text, "test", NUL, "balance"
        let hash = DiskTier.name("balance").hex
        #expect(hash == "947733c96f043ea38a51bc25674345124b28f3e65ce9c8b2d20837b00ea499cb")
        #expect(FileManager.default.fileExists(atPath: "\(directory)/\(hash.prefix(2))/\(hash)"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(directory)/tmp").isEmpty)
    }

    /// Both ways a file is written (unnamed, then linked to its name; or a named temporary
    /// file, renamed): a new entry and its replacement read back whole, and nothing else stays.
    @Test(arguments: [true, false])
    func anEntryIsWrittenAndReplacedWithNoOtherFileLeft(unnamed: Bool) async throws {
        let directory = temporaryDirectory()
        let disk = try DiskTier(directory: directory, budget: 1 << 20, loadsIndex: true, unnamedFiles: unnamed)
        #expect(disk.makesUnnamedFiles == unnamed)  // this machine's file system makes unnamed files
        disk.write("key", sample)
        await disk.waitForWrites()
        let newer = entry([("ETag", "\"b\"")], requested: 20, received: 21, body: "{\"temperature\":4.0}")
        disk.write("key", newer)
        await disk.waitForWrites()

        #expect(await disk.read("key") == newer)
        let hash = DiskTier.name("key").hex
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(directory)/\(hash.prefix(2))") == [hash])
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(directory)/tmp").isEmpty)
        #expect(await (try DiskTier(directory: directory, budget: 1 << 20)).read("key") == newer)
    }

    /// The path is written byte by byte into one string: it must read as the plain joining.
    @Test func aFilePathIsTheFolderTheTwoDigitSubfolderAndTheName() {
        let name = DiskTier.name("balance")
        for directory in ["", "/", "/var/cache/larder", "/tmp/ünïcode cache/😀"] {
            #expect(name.path(under: directory) == directory + "/" + name.hex.prefix(2) + "/" + name.hex)
        }
    }

    enum Damage: String, CaseIterable { case flippedByte, truncated, empty, garbage }

    @Test(arguments: Damage.allCases)
    func aDamagedFileIsAMissAndIsRemoved(_ damage: Damage) async throws {
        let directory = temporaryDirectory()
        let disk = try DiskTier(directory: directory, budget: 1 << 20)
        disk.write("key", sample)
        await disk.waitForWrites()
        let path = disk.path(for: DiskTier.name("key"))
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        switch damage {
        case .flippedByte: bytes[bytes.count - 3] ^= 0x01  // inside the body
        case .truncated: bytes.removeLast(5)
        case .empty: bytes = []
        case .garbage: bytes = Array(repeating: 0x4C, count: 200)
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        #expect(await disk.read("key") == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(disk.count == 0)
        #expect(disk.corruptions == 1)
    }

    @Test func anUnreadableFileIsAMiss() async throws {
        let directory = temporaryDirectory()
        let disk = try DiskTier(directory: directory, budget: 1 << 20)
        disk.write("key", sample)
        await disk.waitForWrites()
        let path = disk.path(for: DiskTier.name("key"))
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)  // a directory, not a file
        #expect(await disk.read("key") == nil)
    }

    /// Frequency first (`AdmissionPolicy`, as in memory): a newcomer pushes an entry out only
    /// once asked more often than it; among those it may push out, the least recently used goes.
    @Test func theByteBudgetEvictsWhatIsAskedLeast() async throws {
        let directory = temporaryDirectory()
        let size = DiskTier.charge(DiskEntryCodec.encode(key: "k0", entry: sample).count)
        let disk = try DiskTier(directory: directory, budget: size * 3)
        await disk.waitForIndex()  // eviction waits for the start-up listing, late in a loaded run
        for i in 0..<3 { disk.write("k\(i)", sample) }
        await disk.waitForWrites()
        _ = await disk.read("k0")  // k1 is now the least recently used, asked once as k2 is
        #expect(!disk.write("k3", sample), "asked once, as often as k1: not written")
        #expect(disk.rejections == 1 && disk.evictions == 0)
        disk.write("k3", sample)  // asked again: more than k1
        await disk.waitForWrites()
        #expect(disk.count == 3)
        #expect(disk.bytes <= disk.budget)
        #expect(disk.evictions == 1)
        #expect(await disk.read("k1") == nil)
        #expect(await disk.read("k0") != nil)
        #expect(await disk.read("k3") != nil)
    }

    @Test func aBudgetShrunkAcrossRestartsIsEnforcedAtStart() async throws {
        let directory = temporaryDirectory()
        let size = DiskTier.charge(DiskEntryCodec.encode(key: "k0", entry: sample).count)
        let big = try DiskTier(directory: directory, budget: size * 10)
        for i in 0..<5 { big.write("k\(i)", sample) }
        await big.waitForWrites()
        let small = try DiskTier(directory: directory, budget: size * 2)
        await small.waitForIndex()
        #expect(small.count == 2)
        #expect(small.bytes <= size * 2)
    }
}
