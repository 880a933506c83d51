import CLinux
import Glibc
import Bodies

/// A detached POSIX thread for one event loop: the loops block in `epoll_wait` and must
/// never run on Swift's cooperative pool. (Named apart from Foundation's `Thread`, which
/// the upstream client's curl thread uses.)
enum LoopThread {
    private final class Body {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    static func start(name: String, _ run: @escaping @Sendable () -> Void) {
        let body = Unmanaged.passRetained(Body {
            larder_set_thread_name(name)
            run()
        }).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { argument in
            let body = Unmanaged<Body>.fromOpaque(argument!).takeRetainedValue()
            body.run()
            return nil
        }, body)
        precondition(status == 0, "pthread_create failed: \(status)")
        pthread_detach(thread)
    }
}
