import Foundation

/// The fuzz targets without libFuzzer: each one over its corpus (`Tests/Fuzz/corpus/NAME/`)
/// and then over mutations of it from a fixed seed, for a set time. Deterministic for a
/// given corpus and duration, so a failure in CI is a failure on any machine.
///
///     larder-fuzz [--seconds N] [--corpus DIR] [TARGET …]
enum FuzzSmoke {
    static func main(_ arguments: [String]) {
        var seconds = 2.0
        var corpus = "Tests/Fuzz/corpus"
        var names: [String] = []
        var rest = arguments.dropFirst()[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--seconds": seconds = Double(rest.popFirst() ?? "") ?? seconds
            case "--corpus": corpus = rest.popFirst() ?? corpus
            default: names.append(argument)
            }
        }
        let targets = names.isEmpty ? FuzzTargets.all : FuzzTargets.all.filter { names.contains($0.name) }
        guard !targets.isEmpty else {
            print("unknown target; known: \(FuzzTargets.all.map(\.name).joined(separator: " "))")
            exit(2)
        }
        for target in targets {
            let seeds = inputs(in: corpus + "/" + target.name)
            var generator = SplitMix(seed: 0x1A2D_E2)
            var runs = 0
            for seed in seeds {
                FuzzTargets.current = seed
                seed.withUnsafeBytes { target.run($0) }
                runs += 1
            }
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                for _ in 0..<64 {
                    let input = mutate(seeds.isEmpty ? [] : seeds[Int(generator.next() % UInt64(seeds.count))], seeds, &generator)
                    FuzzTargets.current = input
                    input.withUnsafeBytes { target.run($0) }
                    runs += 1
                }
            }
            print("fuzz smoke \(target.name): \(seeds.count) corpus inputs, \(runs) runs, 0 crashes")
        }
    }

    static func inputs(in directory: String) -> [[UInt8]] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
        return names.compactMap { FileManager.default.contents(atPath: directory + "/" + $0).map(Array.init) }
    }

    /// One to four edits of the kinds libFuzzer makes: flip, set, insert, delete, duplicate
    /// a run, splice with another input, set a length-like byte to an extreme.
    static func mutate(_ input: [UInt8], _ corpus: [[UInt8]], _ g: inout SplitMix) -> [UInt8] {
        var bytes = input
        let interesting: [UInt8] = [0x00, 0x0A, 0x0D, 0x20, 0x22, 0x2C, 0x2D, 0x2E, 0x2F, 0x30, 0x39, 0x3A, 0x3B, 0x3D, 0x7F, 0x80, 0xFF]
        for _ in 0..<(1 + Int(g.next() % 4)) {
            let position = bytes.isEmpty ? 0 : Int(g.next() % UInt64(bytes.count))
            switch g.next() % 7 {
            case 0 where !bytes.isEmpty: bytes[position] ^= UInt8(1 << (g.next() % 8))
            case 1 where !bytes.isEmpty: bytes[position] = interesting[Int(g.next() % UInt64(interesting.count))]
            case 2: bytes.insert(interesting[Int(g.next() % UInt64(interesting.count))], at: position)
            case 3 where !bytes.isEmpty: bytes.remove(at: position)
            case 4 where !bytes.isEmpty:
                let end = min(bytes.count, position + 1 + Int(g.next() % 16))
                bytes.insert(contentsOf: bytes[position..<end], at: position)
            case 5 where !corpus.isEmpty:
                let other = corpus[Int(g.next() % UInt64(corpus.count))]
                let cut = other.isEmpty ? 0 : Int(g.next() % UInt64(other.count))
                bytes = Array(bytes.prefix(position)) + other[cut...]
            case 6 where !bytes.isEmpty: bytes[position] = g.next() % 2 == 0 ? 0xFF : 0x00
            default: bytes.append(UInt8(truncatingIfNeeded: g.next()))
            }
        }
        return bytes.count > 4096 ? Array(bytes.prefix(4096)) : bytes
    }
}

/// A small, fast, seedable generator (SplitMix64), so the smoke is repeatable.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
