/// Why bytes on a connection are not an acceptable request. Each case carries the
/// status it is answered with; after any of them the connection is closed, because
/// the server no longer knows where the next request would start.
public struct HTTPParseError: Error, Equatable, Sendable, CustomStringConvertible {
    public let status: Int
    public let detail: String

    public var description: String { "\(status): \(detail)" }

    static func bad(_ detail: String) -> HTTPParseError { .init(status: 400, detail: detail) }
    static let uriTooLong = HTTPParseError(status: 414, detail: "The request line is longer than the server accepts.")
    static let headersTooLarge = HTTPParseError(status: 431, detail: "The header block is larger than the server accepts.")
    static let tooManyHeaders = HTTPParseError(status: 431, detail: "The request has more header fields than the server accepts.")
    static let bodyTooLarge = HTTPParseError(status: 413, detail: "The request body is larger than the server accepts.")
    static let bodyNotStored = HTTPParseError(status: 503, detail: "The request body could not be written to the server's disk.")
    static let bodyOverDiskBudget = HTTPParseError(status: 503, detail: "The request body does not fit in what the server's disk budget has free now; try again later.")
    static let bodyOverDiskLimit = HTTPParseError(status: 413, detail: "The request body is larger than the server's disk budget holds.")
    static let versionNotSupported = HTTPParseError(status: 505, detail: "Only HTTP/1.0 and HTTP/1.1 are supported.")
    static let connectNotImplemented = HTTPParseError(status: 501, detail: "CONNECT is not implemented: the server makes no tunnels.")
    static let unknownTransferCoding = HTTPParseError(status: 501, detail: "The transfer coding is not implemented; only chunked is.")
}
