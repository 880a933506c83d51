import CCurl
import Synchronization

/// Larder's only way to reach its upstream APIs: libcurl's multi interface on one
/// dedicated thread, with connections reused across requests and a bound per host.
///
/// `fetch` suspends the calling task without blocking any thread; the event loops and
/// Swift's cooperative pool never wait on the network.
public final class UpstreamClient: Sendable {
    public struct Configuration: Sendable {
        /// TCP connections open to one host at most; further requests queue inside libcurl.
        public var maxConnectionsPerHost: Int = 8
        public var userAgent: String = "larder/\(Version.current)"
        /// A PEM bundle of the CAs https upstreams are verified against, instead of the
        /// system's (`--ca-file`); nil for the system bundle.
        public var caFile: String?

        public init(maxConnectionsPerHost: Int = 8, caFile: String? = nil) {
            self.maxConnectionsPerHost = maxConnectionsPerHost
            self.caFile = caFile
        }
    }

    public let configuration: Configuration
    private let multi: CurlMulti
    private let nextID = Atomic<Int>(0)

    /// libcurl's global initialisation, run once per process before the first handle.
    private static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    public init(configuration: Configuration = Configuration()) {
        precondition(Self.globalInit, "curl_global_init failed")
        self.configuration = configuration
        multi = CurlMulti(maxConnectionsPerHost: configuration.maxConnectionsPerHost)
    }

    /// Transfers submitted and not yet finished (for readiness checks and tests).
    public var transfersInFlight: Int { multi.transfersInFlight }

    /// Whether the thread driving libcurl is running.
    public var isAlive: Bool { multi.isAlive }

    /// Sends the request and returns the response, whatever its status. Throws `UpstreamError`
    /// when no response arrived, and `CancellationError` when the task is cancelled (the
    /// transfer is then removed and its connection closed).
    public func fetch(_ request: UpstreamRequest) async throws -> UpstreamResponse {
        let transfer = try Transfer(id: nextID.add(1, ordering: .relaxed).newValue, request: request,
                                    configuration: configuration)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                transfer.continuation = continuation
                multi.submit(transfer)
            }
        } onCancel: {
            multi.cancel(transfer)
        }
    }

    /// Fails transfers still in flight with `UpstreamError.shutDown` and stops the thread.
    public func shutdown() async {
        await multi.stop()
    }
}

/// Larder's version, sent as `User-Agent: larder/VERSION`.
public enum Version {
    public static let current = "0.1.0"
}
