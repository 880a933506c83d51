import Foundation
import Bodies
import Testing

/// Files that hold bodies too large for memory.
@Suite struct BodyFileTests {
    /// What this process holds open under `directory`.
    private func openFiles(under directory: String) -> [String] {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return fds.compactMap { fd in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + fd)).flatMap { $0.hasPrefix(directory) ? $0 : nil }
        }
    }

    /// A spool file has no name, and once let go it is closed (on a queue of its own, so
    /// freeing a large one's blocks never holds up the thread that let go).
    @Test func aSpoolFileHasNoNameAndIsClosedOnceLetGo() async throws {
        let directory = NSTemporaryDirectory() + "larder-bodyfile-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var file: BodyFile? = try #require(BodyFile.spool(in: directory)) as BodyFile
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        #expect(Array("held".utf8).withUnsafeBytes { file!.write($0, at: 0) })
        #expect(openFiles(under: directory).count == 1)
        file = nil
        for _ in 0..<500 where !openFiles(under: directory).isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        #expect(openFiles(under: directory).isEmpty)
    }
}
