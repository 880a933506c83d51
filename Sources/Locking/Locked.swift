#if LARDER_TSAN
import CLinux
import Synchronization
#else
public import Synchronization
#endif

#if LARDER_TSAN
/// `Synchronization.Mutex` as ThreadSanitizer sees it, in the build `make sanitize` makes with
/// `-DLARDER_TSAN`. A contended `Mutex` waits on a futex inside the standard library, which
/// ThreadSanitizer does not instrument: it then sees no order between two critical sections
/// and reports their accesses as races. Here each section also tells it so
/// (`__tsan_acquire` on entry, `__tsan_release` on exit, on an address of the lock's own).
public struct Locked<Value: ~Copyable>: ~Copyable, @unchecked Sendable {
    private let mutex: Mutex<Value>
    private let token: UnsafeMutableRawPointer

    public init(_ initialValue: consuming sending Value) {
        mutex = Mutex(initialValue)
        token = .allocate(byteCount: 1, alignment: 1)
    }

    deinit { token.deallocate() }

    public borrowing func withLock<Result: ~Copyable, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        let token = token
        return try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            larder_tsan_acquire(token)
            defer { larder_tsan_release(token) }
            return try body(&value)
        }
    }
}
#else
/// The lock every module uses: `Synchronization.Mutex`, but in a ThreadSanitizer build (see
/// the `LARDER_TSAN` branch above, which `make sanitize` compiles).
public typealias Locked<Value: ~Copyable> = Mutex<Value>
#endif
