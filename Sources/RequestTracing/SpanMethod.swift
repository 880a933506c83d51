/// A request method as OpenTelemetry's HTTP conventions name it in spans: one of the
/// methods they know, else `_OTHER` (attribute) and `HTTP` (span name). A client chooses
/// the method token; taken raw into span names, it would let anyone mint names without end.
public enum SpanMethod {
    private static let known: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"]

    /// `http.request.method`.
    public static func attribute(_ method: String) -> String { known.contains(method) ? method : "_OTHER" }

    /// The method's part of a span name.
    public static func name(_ method: String) -> String { known.contains(method) ? method : "HTTP" }
}
