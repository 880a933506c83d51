import HTTPCore
import Testing
@testable import Observability

/// The buffer log lines and responses are written into, and the pieces every access line is made of hold exactly the
/// bytes given, across the buffer's growth and for empty pieces.
@Suite struct ByteBufferTests {
    @Test func appendsMatchAnArrayAcrossGrowth() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            var buffer = ByteBuffer(capacity: 16)
            #expect(buffer.capacity == 0)  // nothing is allocated before the first append
            var expected: [UInt8] = []
            for _ in 0..<40 {
                let chunk = (0..<Int.random(in: 0...300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                switch Int.random(in: 0..<5, using: &generator) {
                case 0: chunk.forEach { buffer.append($0) }
                case 4: buffer.reserve(chunk.count); buffer.append(chunk)
                case 1: buffer.append(chunk)
                case 2: chunk.withUnsafeBytes { buffer.append($0) }
                default: chunk.withUnsafeBufferPointer { buffer.append($0) }
                }
                expected += chunk
            }
            // Compared as a Bool: a failure would otherwise print both buffers whole.
            let (whole, read) = (buffer.array == expected, buffer.withBytes { Array($0) } == expected)
            #expect(buffer.count == expected.count)
            #expect(whole && read)
        }
    }

    /// Appends double the storage; a reservation beyond double takes what it asks for.
    @Test func storageDoublesForAppendsAndFitsALargeReservation() {
        var buffer = ByteBuffer(capacity: 64)
        buffer.append(0x61)
        #expect(buffer.capacity == 64)
        buffer.append([UInt8](repeating: 0x62, count: 64))
        #expect(buffer.capacity == 128)
        buffer.reserve(1_000_000)
        #expect(buffer.capacity == 1_000_065)
        #expect(buffer.array == [0x61] + [UInt8](repeating: 0x62, count: 64))
        buffer.removeAll(keepingCapacity: false)
        #expect(buffer.capacity == 0 && buffer.count == 0)
    }
}
