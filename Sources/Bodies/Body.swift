/// An answer's content, the one form every layer passes on, from the upstream client through
/// the cache to the connection: bytes in memory (almost every answer), a region of a file
/// (a large answer, spooled or stored), or a region of a body still arriving (a large miss,
/// relayed as the origin sends it). A connection sends bytes with `send` and the other two
/// with `sendfile`, never reading them.
public enum Body: Sendable {
    case bytes([UInt8])
    case file(FileRegion)
    case stream(StreamRegion)

    public static let empty = Body.bytes([])

    public var count: Int {
        switch self {
        case .bytes(let bytes): bytes.count
        case .file(let region): region.count
        case .stream(let region): region.count
        }
    }

    public var isEmpty: Bool { count == 0 }

    /// `count`, or for an open-ended body, what of it has arrived so far.
    public var countSoFar: Int {
        if case .stream(let region) = self { return region.countSoFar }
        return count
    }

    /// A body whose length is not known until it has arrived (`StreamRegion.toTheEnd`):
    /// `count` says nothing about it, and it is sent chunked.
    public var isOpenEnded: Bool {
        if case .stream(let region) = self { return region.runsToTheEnd }
        return false
    }

    /// The bytes, when they are in memory; nil for a file region.
    public var inMemory: [UInt8]? {
        if case .bytes(let bytes) = self { return bytes }
        return nil
    }

    /// Whether the bytes are in memory (without copying the array out, as `inMemory` does).
    public var isInMemory: Bool {
        if case .bytes = self { return true }
        return false
    }

    /// Bytes of memory the content holds (a file region holds none).
    public var memoryBytes: Int { inMemory?.count ?? 0 }

    /// The bytes at `range` (RFC 9110 §14.1.2 positions, already checked against `count`).
    public func part(_ range: ClosedRange<Int>) -> Body {
        switch self {
        case .bytes(let bytes): .bytes(Array(bytes[range]))
        case .file(let region): .file(FileRegion(file: region.file, offset: region.offset + range.lowerBound, count: range.count))
        case .stream(let region):
            .stream(StreamRegion(stream: region.stream, offset: region.offset + range.lowerBound, count: range.count, interest: region.interest))
        }
    }

    /// Whether both are the same storage (one array's buffer, or one file), not merely equal.
    public func sharesStorage(with other: Body) -> Bool {
        switch (self, other) {
        case (.bytes(let a), .bytes(let b)):
            a.withUnsafeBufferPointer { a in b.withUnsafeBufferPointer { $0.baseAddress == a.baseAddress } }
        case (.file(let a), .file(let b)):
            a.file === b.file
        case (.stream(let a), .stream(let b)):
            a.stream === b.stream
        default:
            false
        }
    }
}

extension Body: Equatable {
    /// Bytes compare by content; regions by file or stream and place (their content is not read).
    public static func == (a: Body, b: Body) -> Bool {
        switch (a, b) {
        case (.bytes(let x), .bytes(let y)): x == y
        case (.file(let x), .file(let y)): x.file === y.file && x.offset == y.offset && x.count == y.count
        case (.stream(let x), .stream(let y)): x.stream === y.stream && x.offset == y.offset && x.count == y.count
        default: false
        }
    }
}

/// Part of a spool file: what a connection sends with `sendfile`.
public struct FileRegion: Sendable {
    public let file: BodyFile
    public let offset: Int
    public let count: Int

    public init(file: BodyFile, offset: Int, count: Int) {
        self.file = file
        self.offset = offset
        self.count = count
    }
}

/// Part of a body still arriving (`BodyStream`).
public struct StreamRegion: Sendable {
    public let stream: BodyStream
    public let offset: Int
    public let count: Int

    /// The `count` of a region that runs to wherever its open-ended stream ends (an answer
    /// without a `Content-Length`); what it holds is known once the stream is `.complete`.
    public static let toTheEnd = Int.max
    public var runsToTheEnd: Bool { count == Self.toTheEnd }
    /// `count`, or for a region that runs to the end, what of it has arrived so far.
    public var countSoFar: Int { runsToTheEnd ? stream.written - offset : count }
    /// Held by every copy of the region a transfer handed out, and of its parts.
    public let interest: StreamInterest?

    public init(stream: BodyStream, offset: Int = 0, count: Int, interest: StreamInterest? = nil) {
        self.stream = stream
        self.offset = offset
        self.count = count
        self.interest = interest
    }
}

/// Someone may still read a stream. Every copy of the region its writer handed out holds
/// this; when the last is gone (each connection sending it done or closed, no tier waiting
/// to store it) a stream still arriving is abandoned, so its writer stops: a transfer
/// nobody reads would otherwise go on filling its file to the end of an answer of any size.
public final class StreamInterest: Sendable {
    public let stream: BodyStream

    public init(_ stream: BodyStream) {
        self.stream = stream
    }

    deinit { stream.abandon() }
}
