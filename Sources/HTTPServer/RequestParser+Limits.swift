import Bodies

/// What bounds a parser (line, header and body sizes) and where a large body goes, taken
/// from the server's configuration once per connection; kept apart from the parsing itself.
extension RequestParser {
    struct Limits {
        var maxRequestLineBytes: Int
        var maxHeaderBytes: Int
        var maxHeaderCount: Int
        var maxBodyBytes: Int
        var bodyLimit: (@Sendable (Substring) -> Int)? = nil
        /// Where a body larger than `heldBodyBytes` goes: with a `Content-Length`, the request
        /// is dispatched once its head is in, its body a `BodyStream` that fills as the client
        /// sends it; chunked, it is read whole into a file first (`RequestBodyStore`). Nil:
        /// every body is held in memory (up to its limit).
        var spoolDirectory: String? = nil
        /// The room spool files take (`HTTPServerConfiguration.requestSpoolRoom`).
        var spoolRoom: SpoolRoom? = nil
        /// The most of a request body held in memory when it may be spooled.
        var heldBodyBytes = 1 << 20
    }

    init(configuration c: HTTPServerConfiguration) {
        self.init(limits: Limits(maxRequestLineBytes: c.maxRequestLineBytes, maxHeaderBytes: c.maxHeaderBytes,
                                 maxHeaderCount: c.maxHeaderCount, maxBodyBytes: c.maxBodyBytes, bodyLimit: c.bodyLimit,
                                 spoolDirectory: c.requestSpoolDirectory, spoolRoom: c.requestSpoolRoom))
    }
}
