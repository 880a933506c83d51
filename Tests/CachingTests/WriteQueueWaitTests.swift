import Synchronization
import Dispatch
import HTTPCore
import Bodies
import LoopGuests
import Locking
import Testing
import TestSupport
@testable import Caching

/// A miss on an event loop that finds the disk's write queue full waits for room rather than
/// have its entry go unwritten (`DiskTier+Queue`); past its patience it is answered anyway,
/// and until the queue is back under its limit later misses do not wait.
@Suite(.timeLimit(.minutes(1))) struct WriteQueueWaitTests {
    private let sample = entry([("Cache-Control", "max-age=60")], body: String(repeating: "x", count: 1000))
    private var size: Int {
        let key: CacheKey = "/k0"
        return DiskTier.inLine(sample, encodedSize: DiskEntryCodec.encodedSize(key: key.text, entry: sample, rendition: nil))
    }

    /// A tier whose writer is held until the test signals `gate`, with room for `fits` entries.
    private func heldDisk(fits: Int) throws -> (DiskTier, DispatchSemaphore) {
        let disk = try DiskTier(directory: temporaryDirectory(), budget: 1 << 24, writeQueueLimit: fits * size)
        let gate = DispatchSemaphore(value: 0)
        disk.writes.add(start: true) { gate.wait() }
        return (disk, gate)
    }

    /// Starts a waiting write on `loop`; returns its task.
    private func waitingWrite(_ disk: DiskTier, _ key: CacheKey, on loop: FakeLoop, patience: Duration = .seconds(30)) -> Task<Bool, Never> {
        Task(executorPreference: loop) { await LoopExecutor.$current.withValue(loop) { await disk.write(key, sample, waitingUpTo: patience) } }
    }

    /// A write made on `loop`, its executor as a loop's tasks have theirs: what it touches of
    /// the loop's guests is touched on the loop's one queue.
    private func write(_ disk: DiskTier, _ key: CacheKey, on loop: FakeLoop) async -> Bool {
        await withTaskExecutorPreference(loop) { await LoopExecutor.$current.withValue(loop) { await disk.write(key, sample, waitingUpTo: .seconds(30)) } }
    }

    /// Waits until `count` misses wait for room.
    private func untilWaiting(_ disk: DiskTier, _ count: Int) async throws {
        for _ in 0..<2000 where disk.index.withLock({ $0.roomWaiters.count }) < count { try await Task.sleep(for: .milliseconds(5)) }
        #expect(disk.index.withLock { $0.roomWaiters.count } == count)
    }

    @Test func aMissFindingTheQueueFullWaitsUntilTheWriterCatchesUp() async throws {
        let (disk, gate) = try heldDisk(fits: 2)
        let loop = FakeLoop()
        #expect(disk.write("/k0", sample) && disk.write("/k1", sample))
        let waiting = waitingWrite(disk, "/k2", on: loop)
        try await untilWaiting(disk, 1)
        gate.signal()
        #expect(await waiting.value, "a miss that waited has its entry written")
        await disk.waitForWrites()
        #expect(disk.skippedWrites == 0 && disk.count == 3)
        #expect(await disk.read("/k2") == sample)
    }

    @Test func onlyWaitingMissesFillTheQueuePastItsLimitAndNeverPastTwiceIt() async throws {
        let (disk, gate) = try heldDisk(fits: 2)
        let loop = FakeLoop()
        #expect(disk.write("/k0", sample) && disk.write("/k1", sample))
        #expect(!disk.write("/k2", sample), "off a loop a full queue skips")
        let waiting = [waitingWrite(disk, "/k3", on: loop), waitingWrite(disk, "/k4", on: loop)]
        try await untilWaiting(disk, 2)
        let third = await write(disk, "/k5", on: loop)
        #expect(!third, "past twice the limit an entry is skipped, even on a loop")
        #expect(disk.skippedWrites == 2)
        gate.signal()
        for task in waiting { #expect(await task.value) }
        await disk.waitForWrites()
        #expect(disk.count == 4)
    }

    @Test func aWaitThatRunsOutIsAnsweredAndLaterMissesDoNotWaitUntilThereIsRoom() async throws {
        let (disk, gate) = try heldDisk(fits: 1)
        let loop = FakeLoop()
        #expect(disk.write("/k0", sample))
        let waiting = waitingWrite(disk, "/k1", on: loop, patience: .zero)
        try await untilWaiting(disk, 1)
        try await loop.untilArmed()
        loop.fireTimers()
        #expect(await waiting.value, "its entry is in line: it is stored")
        #expect(disk.index.withLock { $0.stalled })
        let later = await write(disk, "/k2", on: loop)
        #expect(!later && disk.skippedWrites == 1, "a stalled disk is not waited for")
        gate.signal()
        await disk.waitForWrites()
        #expect(!disk.index.withLock { $0.stalled })
        #expect(await disk.read("/k1") == sample)
        #expect(await write(disk, "/k3", on: loop))
    }

    /// Through the cache: the miss's answer waits for room, then says `stored`.
    @Test func aMissAnswerWaitsForRoomAndSaysStored() async throws {
        let (disk, gate) = try heldDisk(fits: 2)
        let clock = ManualClock()
        let origin = ScriptedUpstream(clock: clock)
        origin.reply(.init(status: 200, headers: [("Cache-Control", "max-age=60")], body: String(repeating: "y", count: 1000)))
        // A memory tier smaller than the answer: only the disk can keep it.
        let cache = Cache(route: "http://origin.test", policy: .sharedCache, memory: MemoryTier(budget: 512), disk: disk,
                          fetcher: origin, clock: clock) { _, entry in .plain(entry) }
        #expect(disk.write("/k0", sample) && disk.write("/k1", sample))
        let request = CacheRequest(method: .get, resource: "/new", url: "http://origin.test/new", headers: HTTPHeaders(), body: nil)
        let loop = FakeLoop()
        let answer = Task(executorPreference: loop) { await LoopExecutor.$current.withValue(loop) { await cache.answer(request) } }
        try await untilWaiting(disk, 1)
        gate.signal()
        guard case .success(let answered) = await answer.value else {
            Issue.record("the miss failed")
            return
        }
        #expect(answered.status.description == "larder; fwd=miss; fwd-status=200; stored")
        #expect(disk.skippedWrites == 0)
    }
}

/// Stands in for an event loop: always "current", keeping its guests and letting the test
/// fire their timers; work after the turn runs at once. Its jobs and timers run on one serial
/// queue, as a loop's run on its one thread: its guests are touched from no other.
private final class FakeLoop: LoopReactor, @unchecked Sendable {
    private let queue = DispatchQueue(label: "fake-loop")
    private let guests = Locked<[ObjectIdentifier: any LoopGuest]>([:])
    private let timers = Locked<Set<ObjectIdentifier>>([])
    var isCurrent: Bool { true }
    func guest(for key: ObjectIdentifier, make: () -> any LoopGuest) -> any LoopGuest {
        guests.withLock { guests in
            if let guest = guests[key] { return guest }
            let guest = make()
            guests[key] = guest
            return guest
        }
    }
    func watch(_ fd: Int32, readable: Bool, writable: Bool, for key: ObjectIdentifier) {}
    func setTimer(milliseconds: Int?, for key: ObjectIdentifier) {
        timers.withLock { if milliseconds == nil { $0.remove(key) } else { $0.insert(key) } }
    }
    func afterTurn(_ work: @escaping () -> Void) { work() }
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
    /// Waits until a guest has set its timer: the code that set it is done with the guest.
    func untilArmed() async throws {
        for _ in 0..<2000 where timers.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(5)) }
        #expect(!timers.withLock { $0.isEmpty })
    }
    func fireTimers() {
        let due = timers.withLock { timers in guests.withLock { guests in timers.compactMap { guests[$0] } } }
        queue.sync { due.forEach { $0.timerFired() } }
    }
}
