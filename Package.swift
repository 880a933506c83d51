// swift-tools-version: 6.2
import PackageDescription

// The serving modules (server, routes, cache, observability, the upstream client and its
// policy) are built with cross-module optimization in release, so a hit that crosses them
// is inlined and specialised as it was when they were one module.
let crossModule: [SwiftSetting] = [.unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))]

// Release builds of five serving modules also drop Swift's runtime exclusivity checks:
// each where the checks cost at least 1 % of a gated path's instructions, counted by
// callgrind on a build with the checks on everywhere (its figures at each target below).
// The other serving modules (Locking, Routes, UpstreamPolicy) made no check on a gated path;
// LoopGuests' checks, measured alone, added at most 0.6 % to a gated path;
// Bodies and CacheVocabulary keep no variable a check would guard.
// `make test` runs the tests on such a release build; debug builds keep the checks, and
// `make sanitize` runs every test on two of them.
let uncheckedExclusivity: [SwiftSetting] = crossModule
    + [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

let package = Package(
    name: "larder",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "larder", targets: ["LarderCommand"]),
        .executable(name: "larder-bench", targets: ["LarderBench"]),
        .executable(name: "larder-fuzz", targets: ["LarderFuzz"]),
    ],
    // Builds leave the OTLP exporter out with `--disable-default-traits`: `make sanitize`'s
    // ThreadSanitizer build, where swift-otel 1.6.0 does not compile (SendingRisksDataRace in
    // its batch processors under `-sanitize=thread`, Swift 6.3.1). Such a larder refuses a
    // tracing endpoint at start.
    traits: [
        .trait(name: "OTLPExport", description: "Export traces over OTLP/HTTP (swift-otel)."),
        .default(enabledTraits: ["OTLPExport"]),
    ],
    dependencies: [
        // Exact versions, transitive ones included, so every build (the image's too) resolves
        // the same graph wherever it runs; moving one is a deliberate edit here. Package.resolved
        // is not committed: its commit ids differ between mirrors of the same tags.
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        // YAML: its `YAML` trait builds Yams in; a configuration file (`--config`) is composed with
        // Yams into its `InMemoryProvider` (`ConfigFile`, which says why not its file provider).
        .package(url: "https://github.com/apple/swift-configuration", exact: "1.4.0", traits: [.defaults, "YAML"]),
        // Composes a configuration file with the line of each key, for its problems.
        .package(url: "https://github.com/jpsim/Yams", exact: "6.2.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        .package(url: "https://github.com/apple/swift-crypto", exact: "3.12.3"),
        // The metrics backend the executable bootstraps behind swift-metrics, and the registry
        // `/metrics` writes out (`MetricsExposition`).
        .package(url: "https://github.com/swift-server/swift-prometheus", exact: "2.4.1"),
        .package(url: "https://github.com/apple/swift-http-structured-headers", exact: "1.7.0"),
        // OrderedCollections: the bench's LRU to compare the memory tier with.
        .package(url: "https://github.com/apple/swift-collections", exact: "1.6.0"),
        // Pulled in by swift-configuration and SwiftNIO; pinned here, not used directly.
        .package(url: "https://github.com/apple/swift-system", exact: "1.8.1"),
        // Tracing: the spans of each request (`Tracer`), through whatever tracer the executable
        // bootstraps; nil when tracing is off.
        .package(url: "https://github.com/apple/swift-distributed-tracing", exact: "1.7.3"),
        // CoreMetrics: the series off the hit path (`LarderMetrics`, `TraceExportDrops`), through
        // whatever factory they are given or the executable bootstraps; MetricsTestKit for tests.
        .package(url: "https://github.com/apple/swift-metrics", exact: "2.13.0"),
        // Pulled in by the packages above; pinned here, not used directly.
        .package(url: "https://github.com/apple/swift-asn1.git", exact: "1.7.4"),
        .package(url: "https://github.com/apple/swift-async-algorithms.git", exact: "1.1.4"),
        .package(url: "https://github.com/apple/swift-atomics.git", exact: "1.3.0"),
        .package(url: "https://github.com/apple/swift-service-context", exact: "1.5.1"),
        // Traces exported over OTLP/HTTP only (no gRPC): the executable's, never a library module's,
        // so the serving modules build without waiting on SwiftNIO.
        .package(url: "https://github.com/swift-otel/swift-otel", exact: "1.6.0", traits: ["OTLPHTTP"]),
        // Pulled in by swift-otel (its HTTP client, AsyncHTTPClient, is SwiftNIO's); pinned, not used directly.
        .package(url: "https://github.com/swift-otel/swift-w3c-trace-context", exact: "1.0.0"),
        .package(url: "https://github.com/apple/swift-protobuf", exact: "1.39.0"),
        .package(url: "https://github.com/swift-server/async-http-client", exact: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", exact: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl", exact: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2", exact: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", exact: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-transport-services", exact: "1.28.0"),
        .package(url: "https://github.com/apple/swift-http-types", exact: "1.8.0"),
        .package(url: "https://github.com/apple/swift-certificates", exact: "1.21.1"),
        .package(url: "https://github.com/apple/swift-algorithms", exact: "1.2.1"),
        .package(url: "https://github.com/apple/swift-numerics", exact: "1.1.1"),
    ],
    targets: [
        // C shim: epoll, eventfd and accept4, which Glibc does not export to Swift, and CRC-32C.
        .target(name: "CLinux"),
        // The lock the threaded modules share: Synchronization.Mutex, told to ThreadSanitizer in
        // its build (`-DLARDER_TSAN`, `make sanitize`).
        .target(name: "Locking", dependencies: ["CLinux"], swiftSettings: crossModule),
        // HTTP vocabulary, what the server, the upstream client and the cache share: fields,
        // field syntax and octets, methods, dates, entity tags, ranges, target paths.
        // Unchecked: 989 of aggregate-two-hits' 40,003 instructions (the Date field's text).
        .target(name: "HTTPCore", swiftSettings: uncheckedExclusivity),
        // Message bodies: in memory, a region of a spool or entry file, or a body still
        // arriving; the spool files, the disk room they share, and how much of an answer is held.
        // Checked: it keeps no variable a runtime exclusivity check would guard.
        .target(name: "Bodies", dependencies: ["CLinux", "Locking"], swiftSettings: crossModule),
        // The event loop's door for the components that run on its thread beside the server
        // (the upstream client's libcurl, the disk tier's reads, an aggregate's deadlines): the
        // reactor protocol, the loop a Task runs on, and deadlines kept by the loop.
        .target(name: "LoopGuests", dependencies: ["HTTPCore"], swiftSettings: crossModule),
        // The words of caching that the server, the upstream policy and the settings share with
        // the cache: how a cache answered (for the access log and metrics), what an origin's
        // answer may be told to ignore, and what a route does with a client's forced refresh.
        .target(name: "CacheVocabulary", dependencies: ["HTTPCore"], swiftSettings: crossModule),
        // libcurl, with typed wrappers for its variadic calls.
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // hiredis, for the tier every replica shares.
        .systemLibrary(name: "CHiredis", pkgConfig: "hiredis", providers: [.apt(["libhiredis-dev"])]),
        // Where Redis is (`RedisURL`), apart from the client so the settings can read and show
        // `--redis-url` without linking hiredis, nor anything that depends on the settings.
        .target(name: "RedisVocabulary"),
        // A Redis client: one pipelined connection on its own thread with a deadline per command, and a subscriber.
        .target(name: "Redis", dependencies: ["CHiredis", "Locking", "RedisVocabulary"]),
        // The upstream client: one libcurl multi handle on its own thread, async fetch.
        // Unchecked: about 15,600 of relay's 187,000 instructions per MiB (8 %) and 4,400 of
        // pass-through-miss's 228,000 (2 %): the transfer and multi handle.
        .target(name: "Upstream", dependencies: ["CCurl", "HTTPCore", "Bodies", "LoopGuests", "Locking"], swiftSettings: uncheckedExclusivity),
        // A request's trace as the layers under the routes read it: the tracer Larder was given
        // and the span to hang children on, carried in the task's ServiceContext.
        .target(name: "RequestTracing", dependencies: [.product(name: "Tracing", package: "swift-distributed-tracing")]),
        // RFC 9111 semantics and storage: freshness, Age, tiers, single flight. No sockets, no curl.
        // Unchecked: 1,140 of aggregate-two-hits' 40,003 instructions (each part's cache status).
        .target(
            name: "Caching",
            dependencies: [
                "CLinux",
                "HTTPCore",
                "CacheVocabulary",
                "Bodies",
                "LoopGuests",
                "Locking",
                "RequestTracing",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: uncheckedExclusivity
        ),
        // Generic HTTP/1.1 server on POSIX sockets; knows nothing of weather, and of caches only
        // the outcome a response carries for the access log.
        // Unchecked: 3,511 of memory-hit's 22,172 instructions (the connection's and loop's state).
        .target(
            name: "HTTPServer",
            dependencies: [
                "CLinux",
                "HTTPCore",
                "CacheVocabulary",
                "Bodies",
                "LoopGuests",
                "Locking",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: uncheckedExclusivity
        ),
        // The settings of `larder serve`: flags, environment, a configuration file and
        // defaults, validated at start.
        .target(
            name: "Settings",
            dependencies: [
                "HTTPCore",
                "CacheVocabulary",
                "Bodies",
                "HTTPServer",
                "RedisVocabulary",
                "Locking",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Yams", package: "Yams"),
                // swift-configuration's module refers to Atomics' shims through this one.
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // What Larder asks of an upstream: the cache's fetcher on the libcurl client, with
        // backoff and a cap on requests in flight.
        .target(name: "UpstreamPolicy", dependencies: [
            "HTTPCore", "CacheVocabulary", "Bodies", "Caching", "Upstream", "Locking", "RequestTracing", .product(name: "Tracing", package: "swift-distributed-tracing"),
        ], swiftSettings: crossModule),
        // The shared tier on Redis: the cache's store, its subscriber, and whether Redis is usable.
        .target(
            name: "RedisTier",
            dependencies: [
                "Caching", "Redis", "RedisVocabulary", "Settings", "RequestTracing",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // Logs (a swift-log handler writing logfmt or JSON to a writer thread), the names and
        // help of every metric family and the striped counters the hit path's series add to;
        // it knows HTTP's vocabulary and nothing else of Larder, nor any metrics backend.
        // Unchecked: 462 of memory-hit-logged's 42,727 instructions (the access line's output).
        .target(
            name: "Observability",
            dependencies: [
                "CLinux",
                "HTTPCore",
                "Locking",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: uncheckedExclusivity
        ),
        // The server's middleware around the router: each request's access line, its request
        // series (the hit path's own, outside the metrics facade) and, with a tracer, its span.
        .target(
            name: "AccessLogging",
            dependencies: [
                "HTTPCore",
                "CacheVocabulary",
                "Bodies",
                "HTTPServer",
                "Observability",
                "RequestTracing",
                "Locking",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: crossModule
        ),
        // The series that know the cache: lookups by tier (striped, on the hit path), the tiers'
        // levels, aggregate parts, upstreams, reloads, through the swift-metrics facade but for
        // the hit path's. What Redis and the upstream client report reaches it as plain values
        // from where the pieces are composed (`Larder`).
        // Checked: it keeps no variable a runtime exclusivity check would guard.
        .target(
            name: "ServiceMetrics",
            dependencies: [
                "Caching",
                "Observability",
                "AccessLogging",
                "Locking",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: crossModule
        ),
        // The service's routes: the built-in routes and their upstream formats, pass-through
        // routes, and the responses made of cache answers.
        .target(
            name: "Routes",
            dependencies: [
                "HTTPCore",
                "CacheVocabulary",
                "Bodies",
                "LoopGuests",
                "HTTPServer",
                "Caching",
                "Settings",
                "AccessLogging",
                "ServiceMetrics",
                "RequestTracing",
                "Locking",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            resources: [.embedInCode("openapi.yaml")],
            swiftSettings: crossModule
        ),
        // The admin listener's API: purge, tags, inspection.
        .target(
            name: "Admin",
            dependencies: ["HTTPCore", "Bodies", "HTTPServer", "Caching", "Settings", "AccessLogging", "Routes", .product(name: "Logging", package: "swift-log")]
        ),
        // The upstream simulator: both upstream formats, for `--demo`, compose and the tests.
        .target(
            name: "Simulator",
            dependencies: [
                "HTTPCore",
                "HTTPServer",
                "Caching",
                "Routes",
                "Settings",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // The service: every module wired together and run under swift-service-lifecycle, with
        // health and readiness, which read every piece, and `/metrics` over the Prometheus backend.
        .target(
            name: "Larder",
            dependencies: [
                "HTTPCore",
                "Bodies",
                "HTTPServer",
                "Upstream",
                "Caching",
                "Settings",
                "UpstreamPolicy",
                "RedisTier",
                "Observability",
                "AccessLogging",
                "ServiceMetrics",
                "Locking",
                "Routes",
                "Admin",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The executable `larder`: argument parsing, the simulator for `--demo`, and the log
        // handler, metrics backend and tracer it bootstraps.
        .executableTarget(
            name: "LarderCommand",
            dependencies: [
                "CLinux",
                "Larder",
                "Settings",
                "Observability",
                "ServiceMetrics",
                "Simulator",
                "Upstream",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "OTel", package: "swift-otel", condition: .when(traits: ["OTLPExport"])),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Fuzz targets for every decoder of outside bytes: a corpus replay and mutation smoke
        // in `make test`, libFuzzer with AddressSanitizer in `make fuzz`.
        .executableTarget(name: "LarderFuzz", dependencies: ["HTTPCore", "HTTPServer", "Caching", "Settings", "Routes", "TestSupport"]),
        // Measurements that are not tests: `make bench`.
        .executableTarget(
            name: "LarderBench",
            dependencies: [
                "CLinux",
                "HTTPCore",
                "CacheVocabulary",
                "HTTPServer",
                "Upstream",
                "Caching",
                "Settings",
                "Observability",
                "AccessLogging",
                "ServiceMetrics",
                "Simulator",
                "Larder",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "OrderedCollections", package: "swift-collections"),
            ]
        ),
        // What the tests and the fuzz targets share: a raw socket client with deadlines, test
        // servers, child processes (a built `larder`, `redis-server`), a gate that holds
        // upstream calls in flight, a cache clock the test moves, byte mutations, a JSON sample,
        // a logger whose lines a test reads back, a pipe for standard output, tmpfs mounts and
        // configuration files with the problems Larder finds in them.
        .target(name: "TestSupport", dependencies: [
            "CLinux", "HTTPServer", "Caching", "Locking", "Settings",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Tracing", package: "swift-distributed-tracing"),
            .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
        ], path: "Tests/TestSupport"),
        .testTarget(name: "HTTPCoreTests", dependencies: ["HTTPCore"]),
        .testTarget(name: "BodiesTests", dependencies: ["Bodies"]),
        .testTarget(name: "LoopGuestsTests", dependencies: ["LoopGuests"]),
        .testTarget(name: "CacheVocabularyTests", dependencies: ["HTTPCore", "CacheVocabulary"]),
        .testTarget(name: "RedisVocabularyTests", dependencies: ["RedisVocabulary"]),
        .testTarget(name: "RedisTests", dependencies: ["Redis", "RedisVocabulary", "TestSupport"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPCore", "Bodies", "LoopGuests", "HTTPServer", "Locking", "TestSupport"]),
        .testTarget(name: "UpstreamTests", dependencies: ["HTTPCore", "Bodies", "LoopGuests", "Upstream", "HTTPServer", "Locking", "TestSupport"]),
        .testTarget(
            name: "CachingTests",
            dependencies: ["CLinux", "HTTPCore", "CacheVocabulary", "Bodies", "LoopGuests", "Caching", "Locking", "TestSupport", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(name: "LockingTests", dependencies: ["Locking"]),
        .testTarget(name: "SettingsTests", dependencies: ["HTTPCore", "HTTPServer", "RedisVocabulary", "Settings", "TestSupport", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "UpstreamPolicyTests", dependencies: ["HTTPCore", "Upstream", "UpstreamPolicy"]),
        .testTarget(name: "RedisTierTests", dependencies: ["RedisTier"]),
        .testTarget(name: "ServiceMetricsTests", dependencies: [
            "Caching", "ServiceMetrics", "TestSupport", .product(name: "Logging", package: "swift-log"),
            .product(name: "MetricsTestKit", package: "swift-metrics"),
        ]),
        .testTarget(name: "ObservabilityTests", dependencies: ["CLinux", "HTTPCore", "Observability", "TestSupport", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "AccessLoggingTests", dependencies: ["AccessLogging"]),
        .testTarget(name: "RequestTracingTests", dependencies: ["RequestTracing"]),
        .testTarget(name: "RoutesTests", dependencies: ["HTTPCore", "Bodies", "LoopGuests", "HTTPServer", "Caching", "Locking", "Settings", "Routes", "TestSupport"]),
        .testTarget(name: "AdminTests", dependencies: ["Caching", "Routes", "Admin"]),
        .testTarget(name: "SimulatorTests", dependencies: ["Simulator"]),
        // The service end to end: a whole Larder in process or as a child process, and the
        // tests whose subject spans modules (the shipped files, the upstream formats).
        .testTarget(name: "LarderTests", dependencies: [
            "HTTPCore", "CacheVocabulary", "Bodies", "LoopGuests", "HTTPServer", "Caching", "Redis", "RedisVocabulary", "Locking", "Settings", "UpstreamPolicy", "Observability", "AccessLogging", "Routes", "Admin",
            "Simulator", "Larder", "TestSupport", .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Tracing", package: "swift-distributed-tracing"),
            .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)

// Every import is internal unless marked `public import`, and a file sees only the members of
// the modules it imports itself (SE-0409, SE-0444), so a module's dependencies are the ones it
// names, as in Hummingbird.
for target in package.targets where target.type != .system && target.name != "CLinux" {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .enableUpcomingFeature("MemberImportVisibility"),
        .enableUpcomingFeature("InternalImportsByDefault"),
    ]
}
