/// `larder-bench`: measurements that are not tests (run through `make bench`).
let arguments = CommandLine.arguments.dropFirst()
switch arguments.first {
case "upstream-overhead":
    try await UpstreamOverhead.run(count: Int(arguments.dropFirst().first ?? "") ?? 1000, url: arguments.dropFirst(2).first)
case "memory-accounting":
    MemoryAccounting.run(entries: Int(arguments.dropFirst().first ?? "") ?? 50_000)
case "memory-hit":
    await MemoryHit.run(iterations: Int(arguments.dropFirst().first ?? "") ?? 1_000_000)
default:
    print("usage: larder-bench upstream-overhead [count] | memory-hit [iterations] | memory-accounting [entries]")
}
