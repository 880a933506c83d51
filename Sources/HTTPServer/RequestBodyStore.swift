import HTTPCore

/// Where the body of the request being parsed goes, so memory per connection stays bounded
/// for any size: in memory up to `held` bytes; past that, with a spool directory, an unnamed
/// file (a chunked body, dispatched whole) or a `BodyStream` (a body of known length,
/// dispatched at the end of its head and filled as the client sends it).
struct RequestBodyStore {
    let directory: String?
    let held: Int
    private var bytes: [UInt8] = []
    private var spill: BodyFile?
    private var spilled = 0
    /// The body of a request already dispatched, still arriving.
    private(set) var upload: BodyStream?

    init(directory: String?, held: Int) {
        self.directory = directory
        self.held = held
    }

    /// Bytes kept of the current body.
    var count: Int { spill == nil ? bytes.count : spilled }

    /// Whether a body of `length` bytes is streamed rather than held.
    func streams(length: Int) -> Bool { length > held && directory != nil }

    /// Starts a streamed body; false when no spool file could be made.
    mutating func startUpload(length: Int) -> Bool {
        guard let directory, let file = BodyFile.spool(in: directory) else { return false }
        upload = BodyStream(file: file, length: length)
        return true
    }

    /// Appends to a held body: in memory, or in its file once past `held`. False when the
    /// disk refused.
    mutating func keep(_ chunk: UnsafeBufferPointer<UInt8>) -> Bool {
        if spill == nil, bytes.count + chunk.count > held, let directory {
            guard let file = BodyFile.spool(in: directory), bytes.withUnsafeBytes({ file.write($0, at: 0) }) else { return false }
            spill = file
            spilled = bytes.count
            bytes = []
        }
        guard let spill else {
            bytes.append(contentsOf: chunk)
            return true
        }
        guard spill.write(UnsafeRawBufferPointer(chunk), at: spilled) else { return false }
        spilled += chunk.count
        return true
    }

    /// Appends to the streamed body; false when the disk refused. At its end the stream is
    /// finished whole and let go.
    mutating func relay(_ chunk: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let upload, upload.append(UnsafeRawBufferPointer(chunk)) else { return false }
        if case .written(upload.length) = upload.progress {
            upload.finish(succeeded: true)
            self.upload = nil
        }
        return true
    }

    /// The held body, moved out (not copied), leaving the store empty.
    mutating func take() -> Body {
        defer {
            spill = nil
            spilled = 0
        }
        if let spill { return .file(FileRegion(file: spill, offset: 0, count: spilled)) }
        var taken: [UInt8] = []
        swap(&taken, &bytes)
        return .bytes(taken)
    }

    /// Ends a streamed body short, so whatever sends it on stops.
    mutating func abandon() {
        upload?.finish(succeeded: false)
        upload = nil
    }
}
