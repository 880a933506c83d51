import Testing
import TestSupport
@testable import Settings

/// What turns tracing on, where spans go, and the OTEL_* values refused before swift-otel
/// would stop the process on them or pass over them.
@Suite struct TracingExportTests {
    static func export(_ flags: [String: String] = [:], _ environment: [String: String] = [:]) throws -> TracingExport? {
        try TracingExport.resolve(settings: ServeSettings.resolve(flags: flags, environment: environment), environment: environment)
    }

    @Test func offUnlessACollectorIsNamed() throws {
        #expect(try Self.export() == nil)
        #expect(try Self.export([:], ["OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on", "OTEL_EXPORTER_OTLP_ENDPOINT": ""]) == nil)
        // Named, then turned off again by the standard switches.
        #expect(try Self.export(["tracing.endpoint": "http://c:4318"], ["OTEL_SDK_DISABLED": "TRUE"]) == nil)
        #expect(try Self.export([:], ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"]) == nil)
    }

    @Test func theSettingGivesABaseURLAndTheVariablesWinOverIt() throws {
        let given = try #require(try Self.export(["tracing.endpoint": "http://c:4318"]))
        #expect(given.tracesURL == "http://c:4318/v1/traces" && given.givenEndpoint == "http://c:4318")
        #expect(given.sampler == "parentbased_traceidratio" && given.ratio == 1)
        let shared = try #require(try Self.export(["tracing.endpoint": "http://c:4318"], ["OTEL_EXPORTER_OTLP_ENDPOINT": "https://d/otlp/"]))
        #expect(shared.tracesURL == "https://d/otlp/v1/traces" && shared.givenEndpoint == nil)
        // The signal's own URL is taken as it is.
        let signal = try #require(try Self.export([:], ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://e:9/in"]))
        #expect(signal.tracesURL == "http://e:9/in")
    }

    @Test func theRatioComesFromTheSettingUnlessTheSamplersArgumentGivesIt() throws {
        let environment = ["LARDER_TRACING_ENDPOINT": "http://c:4318", "LARDER_TRACING_SAMPLE_RATIO": "0.25"]
        #expect(try Self.export([:], environment)?.ratio == 0.25)
        let argument = try Self.export([:], environment.merging(["OTEL_TRACES_SAMPLER_ARG": "0.01"]) { $1 })
        #expect(argument?.ratio == 0.01)
        let alwaysOn = try Self.export([:], environment.merging(["OTEL_TRACES_SAMPLER": "parentbased_always_on"]) { $1 })
        #expect(alwaysOn?.sampler == "parentbased_always_on" && alwaysOn?.ratio == nil)
        #expect(throws: ConfigurationError.self) { try Self.export(["tracing.sample.ratio": "1.5"]) }
        #expect(throws: ConfigurationError.self) { try Self.export(["tracing.sample.ratio": "-0"]) }
    }

    @Test(arguments: [("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "must be http/protobuf or http/json"),
                      ("OTEL_TRACES_SAMPLER", "xray", "must be one of always_on"),
                      ("OTEL_TRACES_SAMPLER_ARG", "half", "must be a number from 0 to 1"),
                      ("OTEL_TRACES_EXPORTER", "zipkin", "must be otlp or none"),
                      ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "collector:4318", "must be an http:// or https:// URL")])
    func aValueSwiftOTelCannotUseStopsTheStart(_ name: String, _ value: String, _ problem: String) throws {
        #expect {
            try Self.export(["tracing.endpoint": "http://c:4318"], [name: value])
        } throws: { error in
            (error as? ConfigurationError)?.problems == ["\(name) \(problem)"] || "\(error)".contains("\(name) \(problem)")
        }
    }
}
