import Foundation

/// `larder-fuzz`: every decoder of outside bytes under a fuzzer.
///
/// Built by `make fuzz` with `-sanitize=fuzzer,address` and `-DFUZZING`, it hands the target
/// named by `LARDER_FUZZ_TARGET` to libFuzzer (its arguments are libFuzzer's). Built plainly,
/// as every `swift build` does, it is the smoke `make test` runs: each target over its
/// committed corpus, then over seeded mutations of it for a few seconds.
#if FUZZING
import CFuzzDriver

nonisolated(unsafe) var selected: FuzzTargets.Target = { _ in }

let name = ProcessInfo.processInfo.environment["LARDER_FUZZ_TARGET"] ?? ""
guard let target = FuzzTargets.named(name) else {
    FileHandle.standardError.write(Data("set LARDER_FUZZ_TARGET to one of: \(FuzzTargets.all.map(\.name).joined(separator: " "))\n".utf8))
    exit(2)
}
selected = target
var argc = CommandLine.argc
var argv = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in
    selected(UnsafeRawBufferPointer(start: data, count: size))
    return 0
})
#else
FuzzSmoke.main(CommandLine.arguments)
#endif
