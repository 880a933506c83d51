import Foundation
import Testing
import TestSupport
@testable import Larder

/// A configuration file that changes on disk is reloaded as on SIGHUP: swapped as kubelet
/// swaps a mounted ConfigMap (a `..data` link moved to a new folder), or rewritten in place.
@Suite(.timeLimit(.minutes(1))) struct ConfigWatchTests {
    /// A folder laid out as kubelet lays out a ConfigMap volume, and its swap to new contents.
    struct KubeletFolder {
        let folder: URL
        var path: String { folder.appendingPathComponent("larder.yaml").path }
        private var version = 0

        init(_ text: String) throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("larder-configmap-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try swap(to: text)
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "..data/larder.yaml")
        }

        /// Writes a new timestamped folder, points `..data` at it with one rename, removes the old.
        mutating func swap(to text: String) throws {
            version += 1
            let name = "..2026_12_06_00_00_0\(version).000000001"
            let fresh = folder.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: fresh, withIntermediateDirectories: false)
            try Data(text.utf8).write(to: fresh.appendingPathComponent("larder.yaml"))
            let link = folder.appendingPathComponent("..data_tmp").path
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: name)
            #expect(rename(link, folder.appendingPathComponent("..data").path) == 0)
            if version > 1 {
                try FileManager.default.removeItem(at: folder.appendingPathComponent("..2026_12_06_00_00_0\(version - 1).000000001"))
            }
        }
    }

    @Test func aSwappedConfigMapFolderIsNoticed() throws {
        var mounted = try KubeletFolder("port: 0\n")
        let watch = ConfigFileWatch(path: mounted.path)
        let before = try #require(watch.identity())
        try mounted.swap(to: "port: 0\n")
        #expect(watch.identity() != before, "same contents, another file: still a new version")
    }

    @Test func aChangedFileIsReloadedWithoutASignal() async throws {
        let (a, b) = (try ReloadTests.origin("from A"), try ReloadTests.origin("from B"))
        var mounted = try KubeletFolder("port: 0\nroutes:\n  /a:\n    origin: \(a.url)\n")
        let larder = try LarderProcess(["serve", "--config", mounted.path])
        let port = try await larder.waitForPort()
        func get(_ target: String) async throws -> TestResponse {
            let client = try TestClient(port: port)
            try client.send("GET \(target) HTTP/1.1\r\nHost: l\r\n\r\n")
            return try await client.readResponse()
        }
        func waitForLog(_ text: String, count: Int = 1) async throws {
            for _ in 0..<200 where larder.output.components(separatedBy: text).count - 1 < count {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(larder.output.components(separatedBy: text).count - 1 >= count, "\(larder.output)")
        }
        #expect(try await get("/b/x").status == 404)
        try mounted.swap(to: "port: 0\nroutes:\n  /a:\n    origin: \(a.url)\n  /b:\n    origin: \(b.url)\n")
        try await waitForLog("configuration reloaded")
        #expect(try await get("/b/x").text == "from B")
        // A bad version is refused once and the running routes serve on.
        try mounted.swap(to: "port: 0\nroutes:\n  /metrics:\n    origin: \(a.url)\n")
        try await waitForLog("configuration reload refused")
        #expect(try await get("/b/x").text == "from B")
        // An editor's rewrite in place (through the links) is a new version too.
        let real = try FileManager.default.destinationOfSymbolicLink(atPath: mounted.folder.appendingPathComponent("..data").path)
        try Data("port: 0\nroutes:\n  /a:\n    origin: \(a.url)\n".utf8)
            .write(to: mounted.folder.appendingPathComponent(real).appendingPathComponent("larder.yaml"))
        try await waitForLog("configuration reloaded", count: 2)
        #expect(try await get("/b/x").status == 404)
        #expect(larder.output.components(separatedBy: "configuration reload refused").count - 1 == 1, "\(larder.output)")
        larder.signal(SIGTERM)
        #expect(await larder.waitForExit() == 0)
    }
}
