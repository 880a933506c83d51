#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import TestSupport
@testable import Observability

/// Log lines leave in batches from a thread of their own: in order, all of them, and when
/// the output stalls, bounded (dropped lines counted, never a blocked caller).
@Suite(.timeLimit(.minutes(1))) struct LogSinkTests {
    @Test func linesArriveInOrderWithoutAFlush() {
        let pipe = OutputPipe()
        let sink = LogSink(fd: pipe.write)
        let lines = (0..<2000).map { "line \($0)\n" }
        for line in lines { sink.append(Array(line.utf8)) }
        // The writer thread writes them by itself, within a few batches.
        let text = pipe.text { $0.hasSuffix("line 1999\n") }
        #expect(text == lines.joined())
    }

    @Test func aStalledOutputDropsAndCountsLinesInsteadOfBlocking() {
        let pipe = OutputPipe()
        let sink = LogSink(fd: pipe.write, maxBuffered: 4096)
        let line = Array(String(repeating: "x", count: 99).utf8) + [0x0A]
        // Far more than the pipe (64 KiB) and the buffer (4 KiB) hold while nobody reads.
        let started = Date()
        for _ in 0..<5000 { sink.append(line) }
        #expect(Date().timeIntervalSince(started) < 5, "appending must never wait for the output")
        let text = pipe.text { $0.contains("lines dropped") }
        sink.flush()
        let rest = pipe.available()
        let all = text + rest
        let written = all.split(separator: "\n").filter { $0.hasPrefix("xxx") }.count
        // One report per stall: a slow machine's writer may catch up between appends and stall again.
        let dropped = all.matches(of: /fell behind: (\d+) lines dropped/).compactMap { Int($0.1) }.reduce(0, +)
        #expect(dropped > 0)
        #expect(written + dropped == 5000)
    }

    /// A stop writes what is queued and ends the writer; a line after it is written at exit
    /// (`flush`). A sink that never wrote has no writer to wait for.
    @Test func aStopWritesWhatIsQueuedAndEndsTheWriter() async {
        let pipe = OutputPipe()
        let sink = LogSink(fd: pipe.write)
        await sink.stop()
        let lines = (0..<500).map { "line \($0)\n" }
        let busy = LogSink(fd: pipe.write)
        for line in lines { busy.append(Array(line.utf8)) }
        await busy.stop()
        #expect(pipe.available() == lines.joined(), "all of it, before the stop returned")
        busy.append(Array("late\n".utf8))
        try? await Task.sleep(for: .milliseconds(50))
        #expect(pipe.available().isEmpty, "no writer left")
        busy.flush()
        #expect(pipe.available() == "late\n")
    }
}
