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
    do { try HitPath.run(requests: Int(argument(1) ?? "") ?? 10_000, logLevel: argument(2) ?? "warning") } catch {
        print("larder-bench: \(error)")
        exit(1)
    }
case "disk-hit-path":
    do { try HitPath.run(requests: Int(argument(1) ?? "") ?? 10_000, logLevel: argument(2) ?? "warning", fromDisk: true) } catch {
        print("larder-bench: \(error)")
        exit(1)
    }
case "miss-path":
    guard let simulator = argument(2) else {
        print("usage: larder-bench miss-path REQUESTS SIMULATOR-URL [log level]")
        exit(1)
    }
    do { try HitPath.run(requests: Int(argument(1) ?? "") ?? 1000, logLevel: argument(3) ?? "warning", missesFrom: simulator) } catch {
        print("larder-bench: \(error)")
        exit(1)
    }
default:
    print("usage: larder-bench upstream-overhead [count] | memory-hit [iterations] | pieces [iterations] | memory-accounting [entries]"
          + " | fill-disk directory count origin"
          + " | hit-path [requests] [log level] | disk-hit-path [requests] [log level] | miss-path requests simulator-url [log level]")
}
exit(0)
