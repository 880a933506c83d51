import HTTPCore
import Testing
@testable import Larder

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

    @Test func piecesReadBackAsGiven() {
        let pieces: [[UInt8]] = [[], Array("time=".utf8), [], Array(" level=info msg=".utf8), Array(repeating: 0x61, count: 1000), []]
        let stored = RenderedPieces(pieces)
        #expect(stored.count == pieces.count)
        for (index, piece) in pieces.enumerated() {
            #expect(Array(stored[index]) == piece)
        }
        #expect(RenderedPieces([]).count == 0)
    }
}
