import Foundation

/// `larder-bench`: measurements that are not tests (run through `make bench`).
///
/// The main thread stays synchronous (async work runs in a Task it waits for): Valgrind
/// cannot run a process whose main thread is parked in `dispatch_main`, and `hit-path` is
/// meant for callgrind.
let arguments = Array(CommandLine.arguments.dropFirst())

/// Runs async work to completion from the synchronous main thread.
func blocking(_ work: @escaping @Sendable () async throws -> Void) {
    let done = DispatchSemaphore(value: 0)
    Task {
        do { try await work() } catch { print("larder-bench: \(error)"); exit(1) }
        done.signal()
    }
    done.wait()
}

func argument(_ index: Int) -> String? { arguments.count > index ? arguments[index] : nil }

/// The argument at `index`, or the usage printed and the process ended.
func required(_ index: Int, usage: String) -> String {
    guard let value = argument(index) else {
        print("usage: larder-bench \(usage)")
        exit(1)
    }
    return value
}

/// Runs synchronous work that may fail, ending the process with the failure printed.
func throwing(_ work: () throws -> Void) {
    do { try work() } catch {
        print("larder-bench: \(error)")
        exit(1)
    }
}

/// Runs `HitPath` down one path: REQUESTS is the first argument, the log level the one at
/// `logLevel` (default warning).
func path(_ path: HitPath.Path, requests: Int, logLevel: Int) {
    throwing { try HitPath.run(path, requests: Int(argument(1) ?? "") ?? requests, logLevel: argument(logLevel) ?? "warning") }
}

switch arguments.first {
case "upstream-overhead":
    blocking { try await UpstreamOverhead.run(count: Int(argument(1) ?? "") ?? 1000, url: argument(2)) }
case "fill-disk":
    guard let directory = argument(1), let count = argument(2).flatMap({ Int($0) }), let origin = argument(3) else {
        print("usage: larder-bench fill-disk DIRECTORY COUNT ORIGIN")
        exit(1)
    }
    blocking { try await FillDisk.run(directory: directory, count: count, origin: origin) }
case "memory-accounting":
    MemoryAccounting.run(entries: Int(argument(1) ?? "") ?? 50_000)
case "pieces":
    blocking { await Pieces.run(iterations: Int(argument(1) ?? "") ?? 1_000_000) }
case "memory-hit":
    blocking { await MemoryHit.run(iterations: Int(argument(1) ?? "") ?? 1_000_000) }
case "hit-path":
    path(.memoryHit, requests: 10_000, logLevel: 2)
case "disk-hit-path":
    path(.diskHit, requests: 10_000, logLevel: 2)
case "aggregate-path":
    path(.aggregate, requests: 10_000, logLevel: 2)
case "miss-path":
    path(.miss(simulator: required(2, usage: "miss-path REQUESTS SIMULATOR-URL [log level]")), requests: 1000, logLevel: 3)
case "pass-through-miss-path":
    path(.passThroughMiss(origin: required(2, usage: "pass-through-miss-path REQUESTS ORIGIN-URL [log level]")), requests: 1000, logLevel: 3)
case "revalidation-path":
    path(.revalidation(origin: required(2, usage: "revalidation-path REQUESTS ORIGIN-URL [log level]")), requests: 1000, logLevel: 3)
case "relay-path":
    path(.relay(origin: required(2, usage: "relay-path REQUESTS ORIGIN-URL [log level]")), requests: 10, logLevel: 3)
default:
    print("usage: larder-bench upstream-overhead [count] | memory-hit [iterations] | pieces [iterations] | memory-accounting [entries]"
          + " | fill-disk directory count origin"
          + " | hit-path [requests] [log level] | disk-hit-path [requests] [log level] | aggregate-path [requests] [log level]"
          + " | miss-path requests simulator-url [log level] | pass-through-miss-path requests origin-url [log level]"
          + " | revalidation-path requests origin-url [log level] | relay-path requests origin-url [log level]")
}
exit(0)
