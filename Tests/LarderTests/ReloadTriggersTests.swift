import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Testing
@testable import Larder

/// The reload triggers are a service of the group: a graceful stop ends them, and waits for
/// a reload they began.
@Suite(.timeLimit(.minutes(1))) struct ReloadTriggersTests {
    /// Waits up to `seconds` for `condition`, looking every 20 ms.
    static func eventually(seconds: Int = 10, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
    }

    @Test func aGracefulStopWaitsForTheReloadUnderWay() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("larder-triggers-\(UUID().uuidString).yaml").path
        try Data("port: 0\n".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let steps = Mutex<[String]>([])
        let held = Mutex<CheckedContinuation<Void, Never>?>(nil)
        let triggers = ReloadTriggers(hangups: nil, watch: ConfigFileWatch(path: path, interval: .milliseconds(20)), reload: {
            // Not cancellable, as a configuration file's read is not: held until the test lets go.
            await withCheckedContinuation { continuation in
                held.withLock { $0 = continuation }
                steps.withLock { $0.append("reload started") }
            }
            steps.withLock { $0.append("reload finished") }
        })
        let group = ServiceGroup(configuration: .init(services: [.init(service: triggers)], logger: Logger(label: "test")))
        let running = Task {
            try await group.run()
            steps.withLock { $0.append("group returned") }
        }
        // Rewrite until the watch has seen a new version (its first look may come after a
        // rewrite), each time only after a second unseen: a rewrite just after the one it
        // saw would start a second reload once the first ends, if the stop had not come by then.
        for _ in 0..<20 where !steps.withLock({ $0.contains("reload started") }) {
            try Data("port: 0\n# \(UUID())\n".utf8).write(to: URL(fileURLWithPath: path))
            try await Self.eventually(seconds: 1) { steps.withLock { $0.contains("reload started") } }
        }
        #expect(steps.withLock { $0 } == ["reload started"])
        await group.triggerGracefulShutdown()
        try await Task.sleep(for: .milliseconds(200))
        #expect(steps.withLock { $0 } == ["reload started"], "the group returned while a reload was under way")
        held.withLock { $0.take() }?.resume()
        try await Self.eventually { steps.withLock { $0.contains("group returned") } }
        #expect(steps.withLock { $0 } == ["reload started", "reload finished", "group returned"])
        running.cancel()
    }
}
