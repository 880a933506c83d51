import Logging
import Testing
import HTTPCore
@testable import Observability

/// `ByteSet` finds the same first member as a byte-by-byte search, wherever it sits in a
/// word and whatever surrounds it (bytes above ASCII, members of the other kind).
@Suite struct ByteSetTests {
    /// The sets the log lines search with.
    let sets = [LogLine.quoted, JSONString.escaped]

    func naive(_ set: ByteSet, _ bytes: [UInt8], from start: Int = 0) -> Int? {
        bytes.indices.first { $0 >= start && set.contains(bytes[$0]) }
    }

    func found(_ set: ByteSet, _ bytes: [UInt8], from start: Int = 0) -> Int? {
        bytes.withUnsafeBufferPointer { set.firstIndex(in: $0, from: start) }
    }

    @Test func everyByteAtEveryPlace() {
        for set in sets {
            for length in 1...19 {
                for background: UInt8 in [0x61, 0xE9, 0x80, 0xFF] {
                    for place in 0..<length {
                        for byte in 0...255 {
                            var bytes = [UInt8](repeating: background, count: length)
                            bytes[place] = UInt8(byte)
                            #expect(found(set, bytes) == naive(set, bytes), "byte \(byte) at \(place) of \(length)")
                        }
                    }
                }
            }
        }
    }

    @Test func mixedBuffersAndStartingPoints() {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt8 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 56)
        }
        for set in sets {
            for _ in 0..<2000 {
                // Mostly plain text, some members and some bytes above ASCII.
                let bytes = (0..<Int(next() % 40)).map { _ -> UInt8 in
                    let roll = next()
                    return roll < 8 ? next() : roll < 24 ? 0x80 | next() : 0x61 + roll % 26
                }
                for start in 0...bytes.count {
                    #expect(found(set, bytes, from: start) == naive(set, bytes, from: start), "\(bytes) from \(start)")
                }
            }
        }
    }

    @Test func aLongAccessTargetIsEscapedPastItsFirstWord() {
        var line = LogLine(json: true, level: .info, label: "t", message: "GET /weather?lat=52.52&q=\"x\\y\"&lon=13.41\u{1} 200")
        let text = String(decoding: line.finish(), as: UTF8.self)
        #expect(text.contains(#""GET /weather?lat=52.52&q=\"x\\y\"&lon=13.41\u0001 200""#))
    }
}
