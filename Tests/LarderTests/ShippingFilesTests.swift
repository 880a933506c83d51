import Foundation
import Testing
@testable import Larder
@testable import Observability
@testable import AccessLogging
@testable import Settings

/// The Dockerfile and docker-compose.yml agree with each other and with the binary's
/// defaults: port, health check, user and cache volume.
@Suite(.timeLimit(.minutes(1))) struct ShippingFilesTests {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    private static func read(_ name: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(name), encoding: .utf8)
    }

    /// The runtime stage: everything after the last FROM.
    private static func runtimeStage() throws -> String {
        let dockerfile = try read("Dockerfile")
        return String(dockerfile[dockerfile.range(of: "\nFROM ", options: .backwards)!.lowerBound...])
    }

    private static func value(_ pattern: Regex<(Substring, Substring)>, in text: String) throws -> String {
        String(try #require(text.firstMatch(of: pattern)).1)
    }

    @Test func portsAgreeWithTheDefault() throws {
        let runtime = try Self.runtimeStage()
        let exposed = try Self.value(/\nEXPOSE (\d+)/, in: runtime)
        #expect(Int(exposed) == ServeSettings().port)
        #expect(try Self.value(/LARDER_PORT=(\d+)/, in: runtime) == exposed)
        let compose = try Self.read("docker-compose.yml")
        #expect(try Self.value(/- "\d+:(\d+)"/, in: compose) == exposed)
        #expect(try Self.value(/LARDER_PORT: "(\d+)"/, in: compose) == exposed)
    }

    @Test func healthChecksRunTheBinarysHealthcheckOnReadiness() throws {
        let runtime = try Self.runtimeStage()
        let exposed = try Self.value(/\nEXPOSE (\d+)/, in: runtime)
        // No --url: the subcommand asks where the image's own LARDER_HOST and LARDER_PORT say.
        let command = "\"larder\", \"healthcheck\""
        #expect(runtime.contains("HEALTHCHECK") && runtime.contains("CMD [\(command)]"))
        let compose = try Self.read("docker-compose.yml")
        #expect(compose.contains("test: [\"CMD\", \(command)]"))
        let host = try Self.value(/LARDER_HOST=(\S+)/, in: runtime)
        #expect(HealthCheckDefaults.url(environment: ["LARDER_HOST": host, "LARDER_PORT": exposed])
            == "http://127.0.0.1:\(exposed)/readyz")
    }

    @Test func runsAsANonRootNumericUser() throws {
        let runtime = try Self.runtimeStage()
        let user = try Self.value(/\nUSER (\S+)/, in: runtime)
        #expect(user.wholeMatch(of: /[1-9]\d*:[1-9]\d*/) != nil)
        #expect(runtime.contains("chown \(user) "))
    }

    @Test func theCacheVolumeIsWhereLarderWrites() throws {
        let runtime = try Self.runtimeStage()
        let directory = try Self.value(/LARDER_CACHE_DIR=(\S+)/, in: runtime)
        #expect(runtime.contains("VOLUME [\"\(directory)\"]"))
        #expect(runtime.contains("mkdir -p \(directory)"))
        let compose = try Self.read("docker-compose.yml")
        #expect(try Self.value(/LARDER_CACHE_DIR: (\S+)/, in: compose) == directory)
        #expect(try Self.value(/- larder-cache:(\S+)/, in: compose) == directory)
    }

    @Test func theEntrypointServesAndTheBuildIsTheStaticReleaseBuild() throws {
        let dockerfile = try Self.read("Dockerfile")
        #expect(dockerfile.contains("swift build -c release --static-swift-stdlib"))
        #expect(try Self.runtimeStage().contains("ENTRYPOINT [\"larder\", \"serve\"]"))
        let ignore = try Self.read(".dockerignore")
        #expect(ignore.contains(".build*") && ignore.contains(".larder-cache"))
    }
}
