@testable import HTTPServer
import Testing

/// The raw buffer a connection's responses are written into and sent from.
@Suite struct OutputBufferTests {
    private func unsent(_ buffer: borrowing OutputBuffer) -> [UInt8] {
        buffer.withUnsent { Array($0) }
    }

    @Test func piecesComeOutInOrderAcrossGrowthAndPartialSends() {
        var buffer = OutputBuffer()
        #expect(unsent(buffer).isEmpty && buffer.pending == 0)
        var expected: [UInt8] = []
        // Enough pieces of every kind to grow the storage several times from its first 512 bytes.
        for i in 0..<300 {
            buffer.bytes.append("HTTP/1.1 ")
            buffer.bytes.append(decimal: i - 150)
            buffer.bytes.append([0x0D, 0x0A])
            [UInt8]("x".utf8).withUnsafeBytes { buffer.bytes.append($0) }
            buffer.bytes.append(UnsafeRawBufferPointer(start: nil, count: 0))
            expected += Array("HTTP/1.1 \(i - 150)\r\nx".utf8)
        }
        #expect(unsent(buffer) == expected)
        #expect(buffer.bytes.capacity >= expected.count)
        buffer.markSent(7)
        #expect(unsent(buffer) == Array(expected.dropFirst(7)) && buffer.pending == expected.count - 7)
        buffer.bytes.append("tail")
        buffer.markSent(expected.count - 7)
        #expect(unsent(buffer) == Array("tail".utf8))
        // Once everything is sent, writing starts again at the front, in the same storage.
        let capacity = buffer.bytes.capacity
        buffer.markSent(4)
        #expect(buffer.pending == 0 && buffer.bytes.count == 0 && buffer.bytes.capacity == capacity)
        buffer.bytes.append("next")
        #expect(unsent(buffer) == Array("next".utf8))
    }

    @Test func storageBeyondTheKeptSizeIsGivenBackOnceSent() {
        var buffer = OutputBuffer()
        let body = [UInt8](repeating: 0x61, count: OutputBuffer.keptCapacity + 1)
        buffer.bytes.reserve(16)
        buffer.bytes.append(body)
        #expect(buffer.bytes.capacity > OutputBuffer.keptCapacity)
        buffer.markSent(body.count - 1)
        #expect(buffer.pending == 1 && buffer.bytes.capacity > OutputBuffer.keptCapacity)
        buffer.markSent(1)
        #expect(buffer.bytes.capacity == 0 && buffer.pending == 0)
        buffer.bytes.append("again")
        #expect(unsent(buffer) == Array("again".utf8))
    }
}
