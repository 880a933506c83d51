import HTTPServer
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Larder
import Logging
@_spi(Bench) import Observability
import Settings
import Simulator

/// Requests down one path through the whole server in this process (`larder serve` on port
/// 0, requests over one keep-alive loopback connection), so `valgrind --tool=callgrind
/// --toggle-collect='*EventLoopC3run*'` can count the instructions and heap allocations the
/// event loop spends per request: run it twice with different counts and divide the
/// difference (what start-up and warm-up cost cancels out). This is what the performance
/// gate (scripts/gate) runs. Valgrind cannot run a process whose main thread sits in
/// `dispatch_main`, which is why `larder-bench` has a synchronous main.
///
/// Upstreams run in processes of their own (the simulator, or scripts/gate/origin.py), so
/// their loops are not counted.
enum HitPath {
    enum Path {
        /// The demo's weather, asked once, then memory hits.
        case memoryHit
        /// 200 places fetched, written to disk, then asked in turn through a memory tier too
        /// small to keep them: every counted request is a disk hit.
        case diskHit
        /// A new place in every request, fetched from the simulator at this URL.
        case miss(simulator: String)
        /// A new path in every request through a pass-through route (`/storm` to this origin).
        case passThroughMiss(origin: String)
        /// One path through a pass-through route whose origin marks it `no-cache` with an
        /// `ETag`: every request after the first is revalidated and answered 304.
        case revalidation(origin: String)
        /// The demo's `/overview`, an aggregate of two memory hits (weather and balance).
        case aggregate
        /// A new path in every request through a pass-through route to an origin whose
        /// answer is 16 MiB and `no-store`: streamed through, never stored.
        case relay(origin: String)  // asked for /storm/big/N
    }

    static func run(_ path: Path, requests: Int, logLevel: String) throws {
        // Under callgrind on a busy machine a first miss to the in-process simulator took past the
        // default 5 s and failed the gate; the timeout's length costs no instruction.
        var flags = ["port": "0", "log.level": logLevel, "cache.dir": NSTemporaryDirectory() + "larder-hit-path-\(getpid())",
                     "upstream.timeout": "60s"]
        switch path {
        case .memoryHit, .aggregate: flags["demo"] = "true"
        case .diskHit:
            flags["demo"] = "true"
            flags["memory.limit"] = "16KiB"
        case .miss(let simulator):
            flags["weather.url"] = simulator + "/v1/forecast"
            flags["balance.url"] = simulator + "/balance"
        case .passThroughMiss(let origin), .revalidation(let origin), .relay(let origin):
            flags["routes"] = "/storm=\(origin)"
        }
        var settings = try ServeSettings.resolve(flags: flags, environment: [:])
        PlantedAllocation.bootstrapLogging(level: settings.logLevel, format: settings.logFormat)
        // Kept running until the process exits, like the service.
        let demo = settings.demo ? try DemoUpstreams.start(for: &settings, logger: Logger(label: "larder")) : nil
        defer { withExtendedLifetime(demo) {} }
        let service = LarderService(settings: settings)
        try service.start()
        guard let port = service.server?.port else { fatalError("no port") }
        let client = try LoopbackClient(port: port)
        func request(_ target: String) -> [UInt8] {
            Array("GET \(target) HTTP/1.1\r\nHost: bench\r\nUser-Agent: wrk\r\n\r\n".utf8)
        }
        func place(_ i: Int) -> String { "/weather?lat=\(-80 + i / 100).\(String(i % 100 + 100).dropFirst())&lon=13.41" }
        func expect(_ status: Int, _ target: String) throws {
            let answered = try client.exchange(request(target))
            guard answered == status else { throw LoopbackClient.Failure(what: "\(target): status \(answered), not \(status)") }
        }
        switch path {
        case .memoryHit:
            // The first asks the simulator; the rest are memory hits.
            for _ in 0..<(requests + 1) { try expect(200, "/weather?lat=52.52&lon=13.41") }
        case .aggregate:
            for _ in 0..<(requests + 1) { try expect(200, "/overview?lat=52.52&lon=13.41") }
        case .diskHit:
            let places = (0..<200).map(place)
            for place in places { try expect(200, place) }
            blocking { await service.waitForDiskWrites() }
            for i in 0..<requests { try expect(200, places[i % places.count]) }
        case .miss:
            for i in 0..<(requests + 1) { try expect(200, place(i)) }
        case .passThroughMiss:
            for i in 0..<(requests + 1) { try expect(200, "/storm/\(i)") }
        case .relay:
            for i in 0..<(requests + 1) { try expect(200, "/storm/big/\(i)") }
        case .revalidation:
            for _ in 0..<(requests + 1) { try expect(200, "/storm/etag") }
        }
        LogOutput.flush()
        print("\(path): \(requests) requests through 127.0.0.1:\(port), log level \(logLevel)")
    }
}
