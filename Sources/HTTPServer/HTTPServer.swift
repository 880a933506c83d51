#if canImport(Glibc)
import Glibc
#endif
import CLinux
public import Logging
import Synchronization
import Locking

/// A small HTTP/1.1 server on POSIX sockets: one epoll event loop per core, each on its
/// own thread with its own `SO_REUSEPORT` listener. It knows nothing of what it serves:
/// every request goes to one `HTTPHandler` (usually a `Router`).
public final class HTTPServer: Sendable {
    public let configuration: HTTPServerConfiguration
    private let handler: HTTPHandler
    private let logger: Logger
    private let shared: ServerSharedState

    private struct State {
        var loops: [EventLoop] = []
        var port: Int?
        var running = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Locked(State())

    public init(configuration: HTTPServerConfiguration, logger: Logger = Logger(label: "larder.http"),
                handler: @escaping HTTPHandler) {
        self.configuration = configuration
        self.logger = logger
        self.handler = handler
        shared = ServerSharedState(maxTotalOutputBytes: configuration.maxTotalOutputBytes)
    }

    /// The bound port (the kernel's choice when configured with 0); nil before `start`.
    public var port: Int? { state.withLock { $0.port } }

    /// Connections open now, across every loop.
    public var openConnections: Int { shared.openConnections.load(ordering: .relaxed) }

    /// Bytes of output waiting across every connection now (rendered or shared, not yet sent).
    public var outputWaiting: Int { shared.outputBudget.waiting }

    /// Connections accepted since start, across every loop.
    public var acceptedConnections: Int { shared.acceptedConnections.load(ordering: .relaxed) }

    /// Connections closed at accept because their address had `maxUnusedConnectionsPerClient`
    /// connections that had sent nothing yet.
    public var refusedUnusedConnections: Int { shared.refusedUnused.load(ordering: .relaxed) }

    /// epoll_ctl calls the loops made to register, change or remove a connection's or a
    /// guest's descriptor (the listener's and a closing connection's are not counted).
    var epollChanges: Int { shared.epollChanges.load(ordering: .relaxed) }

    /// Binds every listener and starts the loops. Throws if any listener cannot bind,
    /// leaving nothing running. From here on the process ignores SIGPIPE.
    public func start() throws(SystemError) {
        // Peers vanish. The loops' sends say MSG_NOSIGNAL, but what else the process writes
        // does not: hiredis writes with write(2), and standard output is a pipe whose reader
        // may die. A server stays up and sees EPIPE instead, as nginx and Redis do.
        larder_ignore_broken_pipes()
        let count = max(1, configuration.eventLoops)
        var listeners: [Int32] = []
        do {
            try Listener.ensureAvailable(host: configuration.host, port: configuration.port)
            var port = configuration.port
            for _ in 0..<count {
                let fd = try Listener.open(host: configuration.host, port: port)
                listeners.append(fd)
                // Port 0: every later listener joins the port the first one got.
                port = Listener.boundPort(fd)
            }
            let loops = try listeners.map { fd throws(SystemError) in
                try EventLoop(listenerFD: fd, configuration: configuration, handler: handler, shared: shared,
                              logger: logger, onExit: { [weak self] in self?.loopExited() })
            }
            state.withLock {
                $0.loops = loops
                $0.port = port
                $0.running = loops.count
            }
            for (index, loop) in loops.enumerated() {
                LoopThread.start(name: "larder-loop-\(index)") {
                    larder_set_loop_slot(UInt32(index + 1))
                    loop.run()
                }
            }
        } catch {
            listeners.forEach(System.close)
            throw error
        }
    }

    /// Graceful stop: stop accepting, finish in-flight responses, close idle connections;
    /// returns when every loop has exited (at most the grace period later).
    public func shutdown() async {
        let loops = state.withLock { $0.loops }
        loops.forEach { $0.requestStop() }
        await waitUntilStopped()
    }

    /// Returns once every loop has exited.
    public func waitUntilStopped() async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state in
                if state.running == 0 { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    private func loopExited() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.running -= 1
            guard state.running == 0 else { return [] }
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }
}

/// State every loop of one server shares: only counters, so the hot path takes no lock.
final class ServerSharedState: Sendable {
    let openConnections = Atomic<Int>(0)
    let acceptedConnections = Atomic<Int>(0)
    /// Connections closed at accept: their address had its fill of unused ones.
    let refusedUnused = Atomic<Int>(0)
    /// epoll_ctl calls for connections and for guests' descriptors (for tests).
    let epollChanges = Atomic<Int>(0)
    /// Output waiting across every connection, against `maxTotalOutputBytes`.
    let outputBudget: OutputBudget
    /// Connections that have sent nothing yet, by client address.
    let unusedConnections = UnusedConnections()

    init(maxTotalOutputBytes: Int = HTTPServerConfiguration().maxTotalOutputBytes) {
        outputBudget = OutputBudget(limit: maxTotalOutputBytes)
    }
}
