import HTTPCore
import Bodies

/// Where the body of the request being parsed goes, so memory per connection stays bounded
/// for any size. A body of known length is held in memory when it is small enough (or
/// there is no spool directory); a larger one is a `BodyStream` in an unnamed file in the
/// spool directory, which the request is dispatched with at the end of its head and which
/// fills as the client sends. A chunked body is read whole before its request is
/// dispatched, so it goes on with its length: held in memory up to `held`, then moved to
/// an unnamed file that the request carries once the body has ended.
///
/// A spool file takes its room (`SpoolRoom`) as it is written, before each write, so a head
/// that declares a length and sends nothing costs the disk nothing. A body longer than all
/// the room there is is refused at once (413); one that finds no room left, when it does.
struct RequestBodyStore {
    let directory: String?
    let room: SpoolRoom?
    let held: Int
    private var bytes: [UInt8] = []
    /// The body of a request already dispatched, still arriving.
    private(set) var upload: BodyStream?
    /// A chunked body past `held`, and how much of it is in its file.
    private var spilled: BodyFile?
    private var spilledCount = 0

    /// Why the body was refused, once `startUpload` or `append` said false.
    private(set) var failure = HTTPParseError.bodyNotStored

    init(directory: String?, room: SpoolRoom? = nil, held: Int) {
        self.directory = directory
        self.room = room
        self.held = held
    }

    /// Bytes kept of the current body.
    var count: Int { upload?.written ?? (spilled == nil ? bytes.count : spilledCount) }

    /// Whether the body goes to a file rather than memory (streamed, or a chunked one spilled).
    var inFile: Bool { upload != nil || spilled != nil }

    /// Whether a body of `length` bytes is streamed rather than held.
    func streams(length: Int) -> Bool { directory != nil && length > held }

    /// Starts a streamed body of `length` bytes; false when no spool file could be made.
    mutating func startUpload(length: Int) -> Bool {
        if let room, length > room.limit {
            failure = .bodyOverDiskLimit
            return false
        }
        guard let directory, let file = BodyFile.spool(in: directory, room: room) else { return false }
        upload = BodyStream(file: file, length: length)
        return true
    }

    /// Appends to the body: in memory, to its stream, or past `held` to its file. False when
    /// the disk refused.
    mutating func append(_ chunk: UnsafeBufferPointer<UInt8>) -> Bool {
        if let upload {
            return hasRoom(upload.file, through: upload.written + chunk.count) && upload.append(UnsafeRawBufferPointer(chunk))
        }
        if spilled == nil, bytes.count + chunk.count > held, let directory {
            // Past what is held: what was held moves to a file, and the rest follows it.
            guard let file = BodyFile.spool(in: directory, room: room) else { return false }
            guard hasRoom(file, through: bytes.count), bytes.withUnsafeBytes({ file.write($0, at: 0) }) else { return false }
            spilled = file
            spilledCount = bytes.count
            bytes = []
        }
        guard let spilled else {
            bytes.append(contentsOf: chunk)
            return true
        }
        guard hasRoom(spilled, through: spilledCount + chunk.count),
              spilled.write(UnsafeRawBufferPointer(chunk), at: spilledCount) else { return false }
        spilledCount += chunk.count
        return true
    }

    /// Takes the room `file` needs through `end`; says why not when there is none.
    private mutating func hasRoom(_ file: BodyFile, through end: Int) -> Bool {
        guard file.reserve(through: end) else {
            failure = end > room?.limit ?? .max ? .bodyOverDiskLimit : .bodyOverDiskBudget
            return false
        }
        return true
    }

    /// The streamed body has arrived whole.
    mutating func endUpload() {
        upload?.finish(succeeded: true)
        upload = nil
    }

    /// The body read whole, moved out (not copied), leaving the store empty.
    mutating func take() -> Body {
        if let file = spilled {
            defer { discard() }
            return .file(FileRegion(file: file, offset: 0, count: spilledCount))
        }
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

    /// Lets go of a body being read whole that will not be dispatched.
    mutating func discard() {
        bytes = []
        spilled = nil
        spilledCount = 0
    }
}
