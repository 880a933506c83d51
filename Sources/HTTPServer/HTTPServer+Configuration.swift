public import Bodies

/// Every limit and timeout of the server in one value, with documented defaults.
///
/// The defaults are the service's contract: a request line of 8 KiB, a header block of
/// 16 KiB in at most 100 fields, a body of 1 MiB. Timeouts are `Duration`s so tests can
/// shrink them instead of sleeping.
public struct HTTPServerConfiguration: Sendable {
    /// Address to bind, numeric IPv4 or IPv6 (`127.0.0.1`, `0.0.0.0`, `::1`) or `localhost`.
    public var host: String = "127.0.0.1"
    /// Port to bind; 0 asks the kernel for any free port (read back with `HTTPServer.port`).
    public var port: Int = 8080
    /// Event loops, one thread and one `SO_REUSEPORT` listener each. Default: one per CPU.
    public var eventLoops: Int = System.cpuCount
    /// Longest request line, excluding CRLF (414 past it).
    public var maxRequestLineBytes: Int = 8 * 1024
    /// Largest header block, every field line with its CRLF (431 past it).
    public var maxHeaderBytes: Int = 16 * 1024
    /// Most header fields in one request, trailers included (431 past it).
    public var maxHeaderCount: Int = 100
    /// Largest request body, after chunked decoding (413 past it).
    public var maxBodyBytes: Int = 1024 * 1024
    /// The largest body for a request to a path, where some paths take another limit than
    /// `maxBodyBytes` (an upload route); asked once per request that has a body.
    public var bodyLimit: (@Sendable (_ path: Substring) -> Int)?
    /// Time allowed from the first byte of a request to the end of its header block (408, then close).
    public var headerReadTimeout: Duration = .seconds(10)
    /// Longest pause in the arrival of a request body (408, then close): a body must keep coming.
    public var bodyProgressTimeout: Duration = .seconds(10)
    /// Where request bodies over 1 MiB go instead of memory: an unnamed file, handed to the
    /// handler with the request at the end of its head and filled as the body arrives, or
    /// for a chunked body, filled first and handed over once the body is whole
    /// (`RequestBodyStore`). Nil: bodies are held in memory.
    public var requestSpoolDirectory: String?
    /// The disk room those files take, together with answers being fetched (the disk tier's
    /// `SpoolRoom`, out of its budget), as they are written. A body longer than the room's
    /// limit is refused at its head (413); one that finds no room left, when it does (503).
    /// Nil: not counted.
    public var requestSpoolRoom: SpoolRoom?
    /// Told of each answer the server gives on its own, before any handler hears of the
    /// request: one it could not read or take (400, 413, 414, 431, 501, 505, or 503 without
    /// disk room), a timeout (408), a connection over the limit (503). With its status,
    /// detail and the client's address; on the connection's loop. Nil: nobody is told.
    public var refusals: (@Sendable (_ status: Int, _ detail: String, _ client: String) -> Void)?
    /// Time allowed for a whole request body held in memory, however steadily it drips in
    /// (408, then close); a body in a file need only keep arriving (`bodyProgressTimeout`).
    public var bodyReadTimeout: Duration = .seconds(60)
    /// Time an idle keep-alive connection is kept open (then closed silently).
    public var idleTimeout: Duration = .seconds(60)
    /// Time a new connection has to send its first byte (then closed silently): shorter than
    /// `idleTimeout`, so connections opened and never used free their slots sooner.
    public var firstByteTimeout: Duration = .seconds(10)
    /// Connections from one client address that have sent nothing yet, once half of
    /// `maxConnections` are open; one more from that address is then closed at once, unanswered. Connections that send are bounded by
    /// `maxConnections` alone, so one address cannot take every slot by opening connections.
    public var maxUnusedConnectionsPerClient: Int = 64
    /// Time a connection may go without accepting any of the bytes waiting for it (then closed).
    public var writeStallTimeout: Duration = .seconds(30)
    /// Connections open at once across all loops; one more is answered 503 and closed.
    public var maxConnections: Int = 10_000 + 1_024
    /// Output buffered for one connection before it stops reading further requests.
    public var maxOutputBytes: Int = 1024 * 1024
    /// Output waiting across all connections (bodies shared with a stored answer counted in
    /// full) past which a connection that still has output waiting reads no further request
    /// until its own drains; connections with nothing waiting are served as ever.
    public var maxTotalOutputBytes: Int = 16 * 1024 * 1024
    /// Requests read ahead of their responses on one connection (pipelining depth).
    public var maxPipelinedRequests: Int = 64
    /// How a loop waits once nothing is ready (`IdleStrategy`). The default is what compose
    /// and Kubernetes ship; a listener for rare requests (the admin API) sleeps at once.
    public var idleStrategy: IdleStrategy = .yieldThenSleep
    /// How long a graceful stop waits for in-flight responses before closing everything.
    public var shutdownGracePeriod: Duration = .seconds(8)

    public init(host: String = "127.0.0.1", port: Int = 8080) {
        self.host = host
        self.port = port
    }
}

extension Duration {
    var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        return UInt64(max(0, seconds)) &* 1_000_000_000 &+ UInt64(max(0, attoseconds) / 1_000_000_000)
    }
}
