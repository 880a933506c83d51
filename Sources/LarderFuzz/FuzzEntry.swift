import Foundation

/// `larder-fuzz`: every decoder of outside bytes under a fuzzer.
///
/// Built by `make fuzz` with `-sanitize=fuzzer,address` and `-DFUZZING`, libFuzzer's own
/// `main` drives it and calls the target named by `LARDER_FUZZ_TARGET` through
/// `LLVMFuzzerTestOneInput` (the arguments are libFuzzer's). Built plainly, as every
/// `swift build` does, it is the smoke `make test` runs: each target over its committed
/// corpus, then over seeded mutations of it for a few seconds.
#if FUZZING
enum LibFuzzerEntry {
    static let target: FuzzTargets.Target = {
        let name = ProcessInfo.processInfo.environment["LARDER_FUZZ_TARGET"] ?? ""
        guard let target = FuzzTargets.named(name) else {
            FileHandle.standardError.write(Data("set LARDER_FUZZ_TARGET to one of: \(FuzzTargets.all.map(\.name).joined(separator: " "))\n".utf8))
            exit(2)
        }
        return target
    }()
}

@_cdecl("LLVMFuzzerTestOneInput")
public func larderFuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    LibFuzzerEntry.target(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
#else
@main
enum LarderFuzz {
    static func main() { FuzzSmoke.main(CommandLine.arguments) }
}
#endif
