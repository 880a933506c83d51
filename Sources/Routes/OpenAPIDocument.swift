import Foundation
import Settings
/// The OpenAPI document served at `/openapi.yaml`: `openapi.yaml` beside this file (the
/// repository's top-level `openapi.yaml` links to it), compiled in by SwiftPM. It documents
/// the built-in routes and `/overview`; the aggregates a configuration file declares are
/// added to it when the routes are built (`yaml(with:)`).
public enum OpenAPIDocument {
    public static let yaml = String(decoding: PackageResources.openapi_yaml, as: UTF8.self)

    /// The document for these routes: the built-in routes served and the built-in
    /// `/overview` as written in the file (each left out when it is not served, and
    /// `/overview` replaced when a file declares its own), and a path for each declared
    /// aggregate, made from its declaration.
    public static func yaml(builtIn: [String], aggregates: [Aggregate]) -> String {
        var document = yaml
        var documented = builtIn
        if aggregates.contains(where: { $0.path == "/overview" && $0.isBuiltInOverview }) { documented.append("/overview") }
        for path in ["/weather", "/balance", "/overview"] where !documented.contains(path) { removePath(path, from: &document) }
        let declared = aggregates.filter { !$0.isBuiltInOverview }.sorted { $0.path < $1.path }
        guard !declared.isEmpty, let livez = document.range(of: "  /livez:\n") else { return document }
        document.insert(contentsOf: declared.map(path).joined(), at: livez.lowerBound)
        return document
    }

    /// Takes a path item out of the document's `paths`: its key line and every line indented under it.
    private static func removePath(_ path: String, from document: inout String) {
        guard let start = document.range(of: "\n  \(path):\n"),
              let next = document.range(of: "\n  /", range: start.upperBound..<document.endIndex) else { return }
        document.removeSubrange(start.lowerBound..<next.lowerBound)
    }

    /// One declared aggregate's path item: its parameters, its body (each part under its
    /// name, or merged), and the answers every aggregate may give.
    static func path(_ aggregate: Aggregate) -> String {
        let id = aggregate.path.split(whereSeparator: { !$0.isLetter && !$0.isNumber }).map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
        let names = aggregate.parts.map(\.name).joined(separator: ", ")
        let parameters = aggregate.parameters.map { "        - {name: '\($0)', in: query, required: true, schema: \(schema(of: $0, in: aggregate))}\n" }.joined()
        let partsHeader = "            Larder-Parts: {description: 'Each part with its own Cache-Status (RFC 8941 dictionary).', schema: {type: string}}\n"
            + "            Larder-Missing: {description: 'The optional parts missing from a partial answer.', schema: {type: string}}\n"
        let headers = "            Cache-Control: {schema: {type: string}}\n            Age: {$ref: '#/components/headers/Age'}\n"
            + "            ETag: {$ref: '#/components/headers/ETag'}\n            Cache-Status: {$ref: '#/components/headers/CacheStatus'}\n" + partsHeader
        var text = "  \(aggregate.path):\n    get:\n      operationId: getAggregate\(id)\n"
            + "      summary: 'The aggregate of \(names), declared in the configuration file.'\n"
            + "      parameters:\n" + parameters
            + "        - $ref: '#/components/parameters/ifNoneMatch'\n        - $ref: '#/components/parameters/cacheControl'\n"
            + "      responses:\n        '200':\n          description: 'The parts'' JSON; a missing optional part is null and named in Larder-Missing.'\n"
            + "          headers:\n" + headers
            + "          content:\n            application/json:\n              schema:\n" + schema(aggregate)
        for (status, name) in [("304", "NotModified"), ("400", "BadParameter"), ("502", "BadGateway"), ("503", "NotConfigured"), ("504", "GatewayTimeout")] {
            text += "        '\(status)': {$ref: '#/components/responses/\(name)'}\n"
        }
        text += "    head:\n      operationId: headAggregate\(id)\n      summary: 'Headers of the aggregate.'\n"
            + (parameters.isEmpty ? "" : "      parameters:\n" + parameters)
            + "      responses:\n        '200':\n          description: As for GET, without the body.\n          headers:\n" + headers
        for status in ["400", "502", "503", "504"] { text += "        '\(status)': {description: 'As for GET (no body for HEAD).'}\n" }
        return text
    }

    /// A parameter's schema: the weather route's latitude or longitude when it stands for one
    /// (`/weather?lat={name}`), else any text (the part's route or origin judges it).
    private static func schema(of parameter: String, in aggregate: Aggregate) -> String {
        for part in aggregate.parts {
            guard case .builtIn(let mounted) = part.route, mounted.route.name == "weather" else { continue }
            for (before, piece) in zip(part.target.query, part.target.query.dropFirst()) {
                guard case .text(let text) = before, case .parameter(let name) = piece, name == parameter else { continue }
                if text == "lat=" || text.hasSuffix("&lat=") { return "{$ref: '#/components/schemas/Latitude'}" }
                if text == "lon=" || text.hasSuffix("&lon=") { return "{$ref: '#/components/schemas/Longitude'}" }
            }
        }
        return "{type: string}"
    }

    /// The body's schema: each part under its name (a built-in route's whole answer by its
    /// schema, anything else as any JSON), or any object when the parts are merged.
    private static func schema(_ aggregate: Aggregate) -> String {
        let indent = "                "
        guard !aggregate.merge else { return indent + "type: object\n" }
        var text = indent + "type: object\n" + indent + "required: [\(aggregate.parts.map(\.name).joined(separator: ", "))]\n"
            + indent + "properties:\n"
        for part in aggregate.parts {
            var reference: String?
            if case .builtIn(let mounted) = part.route, part.shape.pointer == nil, part.shape.fields == nil {
                reference = mounted.route.name == "weather" ? "Weather" : "Balance"
            }
            switch (reference, part.required) {
            case (let name?, true): text += indent + "  \(part.name): {$ref: '#/components/schemas/\(name)'}\n"
            case (let name?, false): text += indent + "  \(part.name): {anyOf: [{$ref: '#/components/schemas/\(name)'}, {type: 'null'}]}\n"
            case (nil, _): text += indent + "  \(part.name): {}\n"
            }
        }
        return text
    }
}
