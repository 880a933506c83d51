import HTTPCore

/// Where the body of the request being parsed goes, so memory per connection stays bounded
/// for any size: in memory when it is small enough to hold (or there is no spool directory);
/// otherwise a `BodyStream` in an unnamed file in the spool directory, which the request is
/// dispatched with at the end of its head and which fills as the client sends.
struct RequestBodyStore {
    let directory: String?
    let held: Int
    private var bytes: [UInt8] = []
    /// The body of a request already dispatched, still arriving.
    private(set) var upload: BodyStream?

    init(directory: String?, held: Int) {
        self.directory = directory
        self.held = held
    }

    /// Bytes kept of the current body.
    var count: Int { upload?.written ?? bytes.count }

    /// Whether a body is streamed rather than held: one of `length` bytes past `held`, or a
    /// chunked one (nil: its length is unknown until its end) that its `limit` lets pass it.
    func streams(length: Int?, limit: Int) -> Bool { directory != nil && (length ?? limit) > held }

    /// Starts a streamed body of `length` bytes, or (open-ended) of at most `limit`; false
    /// when no spool file could be made.
    mutating func startUpload(length: Int?, limit: Int) -> Bool {
        guard let directory, let file = BodyFile.spool(in: directory) else { return false }
        upload = BodyStream(file: file, length: length ?? limit, openEnded: length == nil)
        return true
    }

    /// Appends to the body: in memory, or to its stream. False when the disk refused.
    mutating func append(_ chunk: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let upload else {
            bytes.append(contentsOf: chunk)
            return true
        }
        return upload.append(UnsafeRawBufferPointer(chunk))
    }

    /// The streamed body has arrived whole.
    mutating func endUpload() {
        upload?.finish(succeeded: true)
        upload = nil
    }

    /// The held body, moved out (not copied), leaving the store empty.
    mutating func take() -> Body {
        var taken: [UInt8] = []
        swap(&taken, &bytes)
        return .bytes(taken)
    }

    /// Ends a streamed body short, so whatever sends it on stops; `refusal` says how the
    /// client is answered when the body failed for its doing.
    mutating func abandon(_ refusal: BodyStream.Refusal? = nil) {
        if let refusal { upload?.refuse(refusal) } else { upload?.finish(succeeded: false) }
        upload = nil
    }
}
