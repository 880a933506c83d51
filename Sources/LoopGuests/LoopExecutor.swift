/// The event loop whose Task is running, for work that Task starts in Tasks of its own (a
/// cache's single flight): started there too, that work's awaits come back to the same
/// loop, without a hop through the shared pool and another wake. Nil outside a loop's Task.
public enum LoopExecutor {
    @TaskLocal public static var current: (any LoopReactor)?

    /// `current`, when this code runs on that loop's own thread: what may use its epoll,
    /// timer and turn. A Task whose loop has ended runs elsewhere, and gets nil.
    public static var reactor: (any LoopReactor)? {
        guard let loop = current, loop.isCurrent else { return nil }
        return loop
    }
}
