import CCurl
import HTTPCore
import LoopGuests
import Synchronization
import Locking

/// Larder's only way to reach its upstream APIs: libcurl's multi interface, with
/// connections reused across requests and a bound per host.
///
/// A fetch made by a Task running on an event loop (`LoopExecutor.current`) is driven by
/// that loop (`CurlLoopGuest`), one multi handle per loop; any other fetch by a multi
/// handle on the client's own thread (`CurlThread`). `fetch` suspends the calling task
/// without blocking any thread; the loops and Swift's cooperative pool never wait on
/// the network.
public final class UpstreamClient: Sendable {
    public struct Configuration: Sendable {
        /// TCP connections open to one host at most, per multi handle (each event loop that
        /// fetches, and the client's thread); further requests queue inside libcurl.
        public var maxConnectionsPerHost: Int = 8
        public var userAgent: String = "larder/\(Version.current)"
        /// A PEM bundle of the CAs https upstreams are verified against, instead of the
        /// system's (`--ca-file`); nil for the system bundle.
        public var caFile: String?
        /// The proxies transfers go through, from the environment when the client is made.
        public var proxies: ProxySettings

        public init(maxConnectionsPerHost: Int = 8, caFile: String? = nil, proxies: ProxySettings = .fromEnvironment()) {
            self.maxConnectionsPerHost = maxConnectionsPerHost
            self.caFile = caFile
            self.proxies = proxies
        }
    }

    public let configuration: Configuration
    private let thread: CurlThread
    private let inFlight = TransferCount()
    /// Every loop guest made, so `shutdown` can stop them.
    private let guests = Locked<[CurlLoopGuest]>([])
    private let nextID = Atomic<Int>(0)
    /// Easy handles between transfers: as many as the multi handles could keep busy at once.
    private let handles: EasyHandles

    /// libcurl's global initialisation, run once per process before the first handle.
    private static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    public init(configuration: Configuration = Configuration()) {
        precondition(Self.globalInit, "curl_global_init failed")
        self.configuration = configuration
        handles = EasyHandles(limit: max(16, configuration.maxConnectionsPerHost * 4))
        thread = CurlThread(maxConnectionsPerHost: configuration.maxConnectionsPerHost, inFlight: inFlight)
    }

    /// Transfers submitted and not yet finished (for readiness checks and tests).
    public var transfersInFlight: Int { inFlight.value.load(ordering: .relaxed) }

    /// Event loops that have driven a fetch of this client.
    public var loopsDriving: Int { guests.withLock { $0.count } }

    /// Whether the thread driving libcurl is running.
    public var isAlive: Bool { thread.isAlive }

    /// Sends the request and returns the response, whatever its status. Throws `UpstreamError`
    /// when no response arrived, and `CancellationError` when the task is cancelled (the
    /// transfer is then removed and its connection closed).
    public func fetch(_ request: UpstreamRequest) async throws -> UpstreamResponse {
        let transfer = try Transfer(id: nextID.add(1, ordering: .relaxed).newValue, request: request,
                                    configuration: configuration, handles: handles)
        let guest = loopGuest()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                transfer.continuation = continuation
                if guest?.submit(transfer) != true { thread.submit(transfer) }
            }
        } onCancel: {
            // A transfer the loop guest refused went to the thread, which ignores a cancel
            // for an id it never had, and the reverse.
            guest?.cancel(transfer)
            thread.cancel(transfer)
        }
    }

    /// The guest of the loop this Task runs on, made on first use; nil off every loop.
    private func loopGuest() -> CurlLoopGuest? {
        guard let loop = LoopExecutor.reactor else { return nil }
        let guest = loop.guest(for: ObjectIdentifier(self)) {
            let guest = CurlLoopGuest(loop: loop, key: ObjectIdentifier(self),
                                      maxConnectionsPerHost: configuration.maxConnectionsPerHost, inFlight: inFlight)
            guests.withLock { $0.append(guest) }
            return guest
        }
        return guest as? CurlLoopGuest
    }

    /// Fails transfers still in flight with `UpstreamError.shutDown`, frees every loop's
    /// handle and stops the thread.
    public func shutdown() async {
        // Taken out, not just read: a guest holds its loop, whose handler may hold this client.
        for guest in guests.withLock({ guests in defer { guests = [] }; return guests }) { await guest.stop() }
        await thread.stop()
        handles.close()
    }
}

/// Larder's version, sent as `User-Agent: larder/VERSION`.
public enum Version {
    public static let current = "0.1.0"
}
