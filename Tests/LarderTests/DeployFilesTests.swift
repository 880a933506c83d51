import Foundation
import Testing
@testable import Larder
@testable import Observability
@testable import AccessLogging
@testable import Settings

/// The dashboard and the alert rules name only metrics Larder exports, and the Kubernetes
/// Deployment agrees with the image (port, user, probes, cache path).
@Suite struct DeployFilesTests {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    private static func read(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// Every `larder_…` name in a text, a histogram's `_bucket`, `_sum` and `_count` series
    /// named by their family.
    private static func metricNames(in text: String) -> Set<String> {
        Set(text.matches(of: /larder_[a-z_]+/).map { match in
            var name = String(match.output)
            for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
                let family = String(name.dropLast(suffix.count))
                if MetricFamily(rawValue: family) != nil { name = family }
            }
            return name
        })
    }

    @Test(arguments: ["deploy/grafana/larder-dashboard.json", "deploy/prometheus/larder-alerts.yaml"])
    func namesOnlyMetricsLarderExports(_ path: String) throws {
        let text = try Self.read(path)
        let names = Self.metricNames(in: text)
        #expect(names.count >= 3)
        let known = Set(MetricFamily.allCases.map(\.name))
        #expect(names.subtracting(known).isEmpty, "unknown: \(names.subtracting(known).sorted())")
    }

    @Test func theDashboardParsesAndEveryPanelHasAQuery() throws {
        let data = try Data(contentsOf: Self.root.appendingPathComponent("deploy/grafana/larder-dashboard.json"))
        let dashboard = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let panels = try #require(dashboard["panels"] as? [[String: Any]])
        #expect(!panels.isEmpty)
        for panel in panels {
            let targets = try #require(panel["targets"] as? [[String: Any]])
            #expect(!targets.isEmpty && targets.allSatisfy { ($0["expr"] as? String)?.contains("larder_") == true })
        }
    }

    @Test func theDeploymentAgreesWithTheImage() throws {
        let deployment = try Self.read("deploy/kubernetes/base/deployment.yaml")
        #expect(deployment.contains("containerPort: \(ServeSettings().port)"))
        #expect(deployment.contains("runAsUser: 10001") && deployment.contains("readOnlyRootFilesystem: true"))
        #expect(deployment.contains("httpGet: {path: /livez, port: http}") && deployment.contains("httpGet: {path: /readyz, port: http}"))
        #expect(deployment.contains("mountPath: /var/cache/larder") && deployment.contains("value: /var/cache/larder"))
    }
}

extension DeployFilesTests {
    /// A container sees every CPU of its host: each file runs as many event loops as its CPU
    /// limit allows, not one per host CPU.
    @Test func eventLoopsMatchTheCPULimit() throws {
        let deployment = try Self.read("deploy/kubernetes/base/deployment.yaml")
        let kubernetesLoops = try #require(deployment.firstMatch(of: /name: LARDER_EVENT_LOOPS, value: "(\d+)"/)?.output.1)
        let kubernetesLimit = try #require(deployment.firstMatch(of: /limits:\s+cpu: "(\d+)"/)?.output.1)
        #expect(kubernetesLoops == kubernetesLimit)
        for path in ["docker-compose.yml", "docker-compose.replicas.yml"] {
            let compose = try Self.read(path)
            let loops = try #require(compose.firstMatch(of: /LARDER_EVENT_LOOPS: \$\{LARDER_EVENT_LOOPS:-(\d+)\}/)?.output.1, "\(path)")
            // The first CPU limit in each file is Larder's service (the simulator's and Redis's follow).
            let limit = try #require(compose.firstMatch(of: /limits: \{cpus: "(\d+)"/)?.output.1, "\(path)")
            #expect(loops == limit, "\(path)")
            #expect(try ServeSettings.resolve(flags: [:], environment: ["LARDER_EVENT_LOOPS": String(loops)]).eventLoops == Int(loops))
        }
    }

    /// Larder, the simulator and the tracing profile's collector alike: each service of the
    /// file carries every hardening line once.
    @Test func everyComposeServiceIsHardened() throws {
        let compose = try Self.read("docker-compose.yml")
        let services = try #require(compose.components(separatedBy: "\nvolumes:").first?.components(separatedBy: "\nservices:").last)
        let names = services.split(separator: "\n").filter { $0.wholeMatch(of: #/  [a-z-]+:/#) != nil }
        #expect(names.count == 3)
        for line in ["read_only: true", "cap_drop: [ALL]", "security_opt: [\"no-new-privileges:true\"]", "tmpfs: [\"/tmp:size=16m\"]",
                     "limits: {cpus:"] {
            #expect(compose.components(separatedBy: line).count - 1 == names.count, "\(line)")
        }
    }
}

extension DeployFilesTests {
    /// Builds are reproducible: every package is named at an exact version (transitive ones
    /// too), so the image resolves the graph the tests ran with.
    @Test func theReplicasOverrideSharesOneRedisAndKeepsAVolumePerReplica() throws {
        let single = try Self.read("docker-compose.yml")
        #expect(!single.contains("REDIS"))
        let replicas = try Self.read("docker-compose.replicas.yml")
        // The default replica, through the override, and the template the other two use.
        #expect(replicas.components(separatedBy: "LARDER_REDIS_URL: redis://redis:6379").count - 1 == 2)
        #expect(replicas.contains("<<: *replica"))
        for volume in ["larder-cache-2:/var/cache/larder", "larder-cache-3:/var/cache/larder"] { #expect(replicas.contains(volume)) }
        #expect(replicas.contains("\"--maxmemory-policy\", \"allkeys-lru\""))
        #expect(replicas.contains("--save\", \"\""))
        let kubernetes = try Self.read("deploy/kubernetes/with-redis/kustomization.yaml")
        #expect(kubernetes.contains("- ../base") && kubernetes.contains("- redis.yaml"))
        #expect(kubernetes.contains("LARDER_REDIS_URL") && kubernetes.contains("port: 6379"))
        let base = try Self.read("deploy/kubernetes/base/deployment.yaml")
        #expect(!base.contains("REDIS"))
    }

    @Test func everyPackageIsPinnedExactly() throws {
        let manifest = try Self.read("Package.swift")
        let packages = manifest.matches(of: /\.package\(url: "([^"]+)", ([a-z]+):/).map { (String($0.output.1), String($0.output.2)) }
        #expect(packages.count >= 10)
        #expect(packages.allSatisfy { $0.1 == "exact" }, "\(packages.filter { $0.1 != "exact" })")
    }
}
