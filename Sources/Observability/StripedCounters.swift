import CLinux
import Foundation
import Synchronization

/// Counters every request adds to (the request series, cache lookups), one stripe per event
/// loop plus one for every other thread, each stripe on cache lines of its own. Two loops
/// adding to one shared cell pass its cache line between cores on every request; striped,
/// each loop's add stays on its own core, and a scrape sums the stripes (bench cell: hot key,
/// two workers, server CPU µs/req).
package final class StripedCounters: @unchecked Sendable {
    /// Counters per stripe.
    let count: Int
    private let stripes: Int
    /// Cells from one stripe to the next: `count` rounded up to whole 64-byte lines.
    private let stride: Int
    private let cells: UnsafeMutablePointer<Atomic<Int>>

    /// One stripe per CPU (a loop each, by default) and one for other threads; more loops
    /// than that share stripes, which stays correct (every add is atomic), only slower.
    package static let defaultStripes = min(64, ProcessInfo.processInfo.activeProcessorCount + 1)

    package init(count: Int, stripes: Int = StripedCounters.defaultStripes) {
        self.count = count
        self.stripes = max(1, stripes)
        let perLine = 64 / MemoryLayout<Atomic<Int>>.stride
        stride = (count + perLine - 1) / perLine * perLine
        let total = stride * self.stripes
        cells = UnsafeMutableRawPointer.allocate(byteCount: max(1, total) * MemoryLayout<Atomic<Int>>.stride, alignment: 64)
            .bindMemory(to: Atomic<Int>.self, capacity: total)
        for cell in 0..<total { (cells + cell).initialize(to: Atomic(0)) }
    }

    deinit {
        cells.deinitialize(count: stride * stripes)
        cells.deallocate()
    }

    package func add(_ index: Int, _ amount: Int = 1) {
        let stripe = Int(larder_get_loop_slot()) % stripes
        cells[stripe * stride + index].wrappingAdd(amount, ordering: .relaxed)
    }

    /// Sets counters back to zero in every stripe (a slot taken again for another series).
    package func zero(_ range: Range<Int>) {
        for stripe in 0..<stripes {
            for index in range { cells[stripe * stride + index].store(0, ordering: .relaxed) }
        }
    }

    /// The total of one counter over every stripe.
    package subscript(index: Int) -> Int {
        var total = 0
        for stripe in 0..<stripes { total &+= cells[stripe * stride + index].load(ordering: .relaxed) }
        return total
    }
}
