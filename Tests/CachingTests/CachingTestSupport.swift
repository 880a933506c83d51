import Dispatch
import Foundation
import HTTPCore
import Bodies
import LoopGuests
@testable public import Caching

// Helpers every caching test uses: stored entries at points of a fixed test time, HTTP
// dates for them, and fresh cache directories.

/// A point in test time: seconds after a fixed origin.
func t(_ seconds: TimeInterval) -> Date { Date(timeIntervalSince1970: 1_800_000_000 + seconds) }

/// The IMF-fixdate of a point in test time.
func httpDate(_ seconds: TimeInterval) -> String { HTTPDate.format(t(seconds)) }

/// A stored entry whose exchange ran from `requested` to `received`, with the given header fields.
func entry(_ headers: [(String, String)], requested: TimeInterval = 0, received: TimeInterval = 0, body: String = "{}",
           status: Int = 200) -> CacheEntry {
    CacheEntry(status: status, headers: HTTPHeaders(headers), body: Array(body.utf8),
               requestTime: t(requested), responseTime: t(received))
}

/// A new, empty directory for a disk tier.
func temporaryDirectory() -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("larder-cache-test-\(UUID().uuidString)").path
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// A key written as text in a test is a resource of the route `test`.
extension CacheKey: ExpressibleByStringLiteral, ExpressibleByStringInterpolation,
    ExpressibleByUnicodeScalarLiteral, ExpressibleByExtendedGraphemeClusterLiteral {
    public init(stringLiteral resource: String) { self.init(route: "test", resource: resource) }
}

/// Stands in for an event loop: always "current", keeping after-turn work until told to run it.
final class HeldTurn: LoopReactor, @unchecked Sendable {
    /// Touched by the test's own task only.
    var held: [() -> Void] = []
    var isCurrent: Bool { true }
    func guest(for key: ObjectIdentifier, make: () -> any LoopGuest) -> any LoopGuest { make() }
    func watch(_ fd: Int32, readable: Bool, writable: Bool, for key: ObjectIdentifier) {}
    func setTimer(milliseconds: Int?, for key: ObjectIdentifier) {}
    func afterTurn(_ work: @escaping () -> Void) { held.append(work) }
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        DispatchQueue.global().async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
    func endTurn() {
        let work = held
        held = []
        work.forEach { $0() }
    }
}

extension Cache {
    /// Flights to the upstream running now (foreground or background refresh), for tests
    /// that wait until background refreshes have finished.
    var flightsInProgress: Int { flights.inFlight }
}
