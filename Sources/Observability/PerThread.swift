#if canImport(Glibc)
import Glibc
#endif

/// One value per thread, made on the thread's first use and released when it exits: the
/// access line's reusable pieces live here, so the two event loops never share or lock them.
/// Through pthread's keys, as Swift has no thread-local storage of its own.
package final class PerThread<Value>: @unchecked Sendable {
    private let key: pthread_key_t
    private let initial: () -> Value

    /// `initial` must be safe to call from any thread (the `@unchecked` above rests on it).
    package init(_ initial: @escaping () -> Value) {
        self.initial = initial
        var key = pthread_key_t()
        // Released as any object: a C function cannot name the generic box.
        pthread_key_create(&key) { box in box.map { Unmanaged<AnyObject>.fromOpaque($0).release() } }
        self.key = key
    }

    /// This thread's value, changed in place.
    package func withValue<Result>(_ body: (inout Value) -> Result) -> Result {
        if let box = pthread_getspecific(key) { return body(&Unmanaged<Box>.fromOpaque(box).takeUnretainedValue().value) }
        let box = Box(initial())
        pthread_setspecific(key, Unmanaged.passRetained(box).toOpaque())
        return body(&box.value)
    }

    private final class Box {
        var value: Value
        init(_ value: Value) { self.value = value }
    }
}
