import HTTPCore
public import Logging

/// Whether `larder serve` exports traces, and how, from its settings and the standard
/// `OTEL_*` variables. Off unless a collector is named: `tracing-endpoint` (flag, variable
/// or file) or `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; then
/// `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turn it off again. swift-otel
/// applies the `OTEL_*` variables over Larder's settings, as the OpenTelemetry SDKs do; this
/// type refuses the values it would stop the process on (gRPC is not built in) or ignore.
public struct TracingExport: Equatable, Sendable {
    /// Where spans go, as the exporter will send them (`…/v1/traces`).
    public let tracesURL: String
    /// The collector base URL Larder's settings give, if any (swift-otel takes a URL set in
    /// code as is, so the exporter is given `tracesURL` made of it).
    public let givenEndpoint: String?
    /// The sampler's name (`parentbased_traceidratio` unless `OTEL_TRACES_SAMPLER` says) and its ratio.
    public let sampler: String
    public let ratio: Double?

    /// The samplers swift-otel has (the Jaeger and X-Ray ones stop the process).
    public static let samplers = ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off",
                                  "parentbased_traceidratio"]

    /// nil when tracing is off; a problem per `OTEL_*` value that cannot be used.
    public static func resolve(settings: ServeSettings, environment: [String: String]) throws(ConfigurationError) -> TracingExport? {
        func given(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        if given("OTEL_SDK_DISABLED")?.lowercased() == "true" || given("OTEL_TRACES_EXPORTER") == "none" { return nil }
        let shared = given("OTEL_EXPORTER_OTLP_ENDPOINT"), signal = given("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        guard let base = shared ?? settings.tracingEndpoint ?? signal else { return nil }
        var problems: [String] = []
        for name in ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] {
            if let url = given(name), !SettingValues.isHTTPURL(url) {
                problems.append("\(name) must be an http:// or https:// URL, got '\(QuotedText.of(url))'")
            }
        }
        for name in ["OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] {
            if let value = given(name), !["http/protobuf", "http/json"].contains(value) {
                problems.append("\(name) must be http/protobuf or http/json (Larder exports over OTLP/HTTP only), got '\(QuotedText.of(value))'")
            }
        }
        if let exporter = given("OTEL_TRACES_EXPORTER"), exporter != "otlp" {
            problems.append("OTEL_TRACES_EXPORTER must be otlp or none, got '\(QuotedText.of(exporter))'")
        }
        let sampler = given("OTEL_TRACES_SAMPLER") ?? "parentbased_traceidratio"
        if !samplers.contains(sampler) {
            problems.append("OTEL_TRACES_SAMPLER must be one of \(samplers.joined(separator: ", ")), got '\(QuotedText.of(sampler))'")
        }
        var ratio: Double? = sampler.hasSuffix("traceidratio") ? settings.tracingSampleRatio : nil
        if let argument = given("OTEL_TRACES_SAMPLER_ARG"), ratio != nil {
            ratio = SettingValues.ratio(argument)
            if ratio == nil { problems.append("OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, got '\(QuotedText.of(argument))'") }
        }
        if !problems.isEmpty { throw ConfigurationError(problems: problems) }
        // The signal's own URL is used as is; a base URL gets the signal's path (OTLP/HTTP's rule).
        let url = signal ?? (base.hasSuffix("/") ? base + "v1/traces" : base + "/v1/traces")
        return TracingExport(tracesURL: url, givenEndpoint: shared == nil ? settings.tracingEndpoint : nil, sampler: sampler, ratio: ratio)
    }
}

extension TracingExport {
    /// The fields of the line that says tracing is on.
    public var summary: Logger.Metadata {
        var fields: Logger.Metadata = ["traces_url": .string(RedactedURL.text(tracesURL)), "sampler": .string(sampler)]
        if let ratio { fields["ratio"] = .stringConvertible(ratio) }
        return fields
    }
}
