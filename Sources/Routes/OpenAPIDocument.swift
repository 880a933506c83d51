/// The OpenAPI document served at `/openapi.yaml`: `openapi.yaml` beside this file (the
/// repository's top-level `openapi.yaml` links to it), compiled in by SwiftPM.
public enum OpenAPIDocument {
    public static let yaml = String(decoding: PackageResources.openapi_yaml, as: UTF8.self)
}
