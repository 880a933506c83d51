import CCurl
import Foundation
import HTTPCore
import Bodies
import Synchronization

/// One exchange: a libcurl easy handle configured from an `UpstreamRequest`, the bytes
/// its callbacks collect, and the continuation its caller awaits.
///
/// After submission only the multi thread touches it, except `cancelled`, which any
/// thread may set.
final class Transfer: @unchecked Sendable {
    let id: Int
    let easy: UnsafeMutableRawPointer
    /// The most of the body held in memory; past it the body goes to `spool`, when allowed.
    let maxBodyBytes: Int
    /// Where a body past `maxBodyBytes` is spooled; nil when it may not be.
    let spoolDirectory: String?
    /// `UpstreamRequest.streamsFrom`, for a GET; nil otherwise.
    let streamsFrom: Int?
    /// `UpstreamRequest.spoolRoom` and `storesUpTo`.
    let spoolRoom: SpoolRoom?
    let storesUpTo: Int?
    /// The streamed body is read at its readers' pace (`BodyStream.pace`), and this transfer
    /// waits for them (`heldBack`) when it is that far ahead.
    private var paced = false
    private(set) var heldBack = false
    let cancelled = Atomic<Bool>(false)
    var continuation: CheckedContinuation<UpstreamResponse, any Error>?
    var requestTime = Date()
    /// The kept connections of its multi handle (`KeptConnections.watch`); whether the one
    /// chosen for it held stray bytes, and whether it then went again on a new one.
    var keptConnections: KeptConnections?
    var refusedConnection = false, sentAgain = false

    private var headerList: UnsafeMutablePointer<curl_slist>?
    let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    private(set) var head = ReceivedFields()
    private(set) var body: [UInt8] = []
    private(set) var bodyTooLarge = false
    /// The file the body went on into once it passed `maxBodyBytes`, and how much is in it.
    private(set) var spool: BodyFile?
    private(set) var spooled = 0
    var spoolFailure: String?
    /// The body being relayed as it arrives; the caller already has the response.
    fileprivate var stream: BodyStream?
    /// Bytes of a streamed body this transfer may still take before it pauses for the rest
    /// of its driver's turn; `paused` while it waits for `resume`.
    private var turnBudget = 0
    private(set) var paused = false
    /// How much of a streamed body one turn of the loop takes in. libcurl reads a socket
    /// until it is empty, and a fast origin keeps it full: a large miss held its loop (and
    /// the answer's own head, waiting in the loop's inbox) for many turns' worth before the
    /// first byte went out (bench cell: large objects, 1 GiB streamed miss, first byte).
    static let bytesPerTurn = 512 << 10
    /// A final head has arrived (for the head deadline of a transfer that may stream).
    fileprivate var headDone = false
    /// The head deadline passed first (`CURLE_ABORTED_BY_CALLBACK` is then a timeout).
    private(set) var headTimedOut = false
    /// When the head must have arrived by, on `MonotonicClock`; nil: curl's own timeout applies.
    private var headDeadline: UInt64?
    /// A request body libcurl reads as it sends (a file, or a stream still arriving), and how
    /// much of it has gone; nil when the body is in memory, or there is none.
    var upload: Body?
    var uploaded = 0
    /// Paused until more of a streamed request body arrives (`resumeWaiting`).
    var uploadWaiting = false
    var uploadFailure: String?
    /// Set by the driver before submission: from any thread, has it call `resumeWaiting` on
    /// its own once more of the request body has arrived, or the answer's readers moved on.
    var wake: (@Sendable () -> Void)?

    private let handles: EasyHandles

    init(id: Int, request: UpstreamRequest, configuration: UpstreamClient.Configuration, handles: EasyHandles) throws(UpstreamError) {
        guard let easy = handles.take() else { throw .invalidRequest("curl_easy_init failed") }
        self.id = id
        self.easy = easy
        self.handles = handles
        self.maxBodyBytes = request.maxBodyBytes
        self.spoolDirectory = request.spoolDirectory
        self.streamsFrom = request.method == .get ? request.streamsFrom : nil
        self.spoolRoom = request.spoolRoom
        self.storesUpTo = request.storesUpTo
        errorBuffer.initialize(to: 0)
        do {
            try configure(request, configuration)
        } catch {
            release()
            throw error
        }
    }

    private func configure(_ request: UpstreamRequest, _ configuration: UpstreamClient.Configuration) throws(UpstreamError) {
        func check(_ code: CURLcode, _ what: String) throws(UpstreamError) {
            guard code == CURLE_OK else { throw .invalidRequest("\(what): \(String(cString: curl_easy_strerror(code)))") }
        }
        guard let scheme = WebScheme.prefixLength(request.url) else { throw .invalidRequest("only http and https URLs: \(request.url)") }
        try check(larder_easy_setopt_string(easy, CURLOPT_URL, request.url), "URL \(request.url)")
        // Only http and https: a configured URL must never reach file:// or other schemes.
        try check(larder_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https"), "protocols")
        _ = larder_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        // Both always set (empty: none, no exceptions), so libcurl never reads the environment itself.
        _ = larder_easy_setopt_string(easy, CURLOPT_PROXY, configuration.proxies.proxy(schemeLength: scheme))
        _ = larder_easy_setopt_string(easy, CURLOPT_NOPROXY, configuration.proxies.noProxy)
        if let caFile = configuration.caFile { try check(larder_easy_setopt_string(easy, CURLOPT_CAINFO, caFile), "CA file") }
        // The path is normalised once, by Larder, before it is matched and keyed; curl must
        // not remove dot segments again (that could move it out of its route).
        _ = larder_easy_setopt_long(easy, CURLOPT_PATH_AS_IS, 1)
        let sendsAsItArrives = !(request.body?.isInMemory ?? true)
        if streamsFrom == nil, !sendsAsItArrives {
            _ = larder_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, Self.milliseconds(request.timeout))
        } else {
            // A streamed body, either way, may take longer than any head should: the timeout
            // bounds any stall as long as itself (less than a byte a second) and the wait for
            // an answer's head (checked in the progress callback), not the whole transfer.
            _ = larder_easy_setopt_long(easy, CURLOPT_LOW_SPEED_LIMIT, 1)
            _ = larder_easy_setopt_long(easy, CURLOPT_LOW_SPEED_TIME, max(1, (Self.milliseconds(request.timeout) + 999) / 1000))
        }
        if streamsFrom != nil {
            headDeadline = MonotonicClock.nanoseconds() + UInt64(Self.milliseconds(request.timeout)) * 1_000_000
            _ = larder_easy_setopt_progress(easy) { context, _, _, _, _ in
                Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().checkHeadDeadline()
            }
            _ = larder_easy_setopt_pointer(easy, CURLOPT_XFERINFODATA, Unmanaged.passUnretained(self).toOpaque())
        }
        _ = larder_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(request.connectTimeout))
        var fields = request.headers.map(Self.fieldLine)
        if request.forwarding {
            _ = larder_easy_setopt_long(easy, CURLOPT_HTTP_CONTENT_DECODING, 0)
            // curl sends `Accept: */*` unless told otherwise; a forwarded request carries only its own.
            if !request.headers.contains("accept") { fields.append(Self.curlDirective("Accept:")) }
        } else {
            _ = larder_easy_setopt_string(easy, CURLOPT_USERAGENT, configuration.userAgent)
            // Empty string: offer every encoding this libcurl decodes (gzip among them) and decode it.
            _ = larder_easy_setopt_string(easy, CURLOPT_ACCEPT_ENCODING, "")
        }
        // A HEAD answer's Content-Length announces a body that never comes, and an answer that
        // streams may be of any length: 0 turns curl's check off (`receiveHeaderLine` checks
        // the length of one that does not stream).
        _ = larder_easy_setopt_offset(easy, CURLOPT_MAXFILESIZE_LARGE, request.method == .head || streamsFrom != nil ? 0 : curl_off_t(largestBody))
        _ = larder_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer)
        _ = larder_easy_setopt_pointer(easy, CURLOPT_PRIVATE, Unmanaged.passUnretained(self).toOpaque())

        let context = Unmanaged.passUnretained(self).toOpaque()
        _ = larder_easy_setopt_callback(easy, CURLOPT_WRITEFUNCTION, { data, size, count, context in
            Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().receiveBody(data, size * count)
        })
        _ = larder_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context)
        _ = larder_easy_setopt_callback(easy, CURLOPT_HEADERFUNCTION, { data, size, count, context in
            Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().receiveHeaderLine(data, size * count)
        })
        _ = larder_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, context)

        switch (request.method, request.body) {
        case (.get, nil): break
        case (.head, _): break  // NOBODY below: a HEAD answer has no body to wait for, content or not
        case (.post, _?): break  // a body makes curl send POST
        default: try check(larder_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, request.method.description), "method")
        }
        if let body = request.body {
            // Always with its length: a chunked request body was read whole before it came here.
            _ = larder_easy_setopt_offset(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count))
            if let bytes = body.inMemory {
                bytes.withUnsafeBytes { bytes in
                    _ = larder_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress ?? UnsafeRawPointer(errorBuffer)))
                }
            } else {
                upload = body
                _ = larder_easy_setopt_long(easy, CURLOPT_POST, 1)
                _ = larder_easy_setopt_callback(easy, CURLOPT_READFUNCTION, { data, size, count, context in
                    Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().sendBody(data, size * count)
                })
                _ = larder_easy_setopt_pointer(easy, CURLOPT_READDATA, context)
                _ = larder_easy_setopt_seek(easy) { context, offset, origin in
                    Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().rewindBody(to: Int(offset), origin)
                }
                _ = larder_easy_setopt_pointer(easy, CURLOPT_SEEKDATA, context)
            }
            // curl would add a form Content-Type and Expect: 100-continue of its own; a blank value removes them.
            if !request.headers.contains("content-type") { fields.append(Self.curlDirective("Content-Type:")) }
            fields.append(Self.curlDirective("Expect:"))
        }
        if request.method == .head {
            if request.body != nil { try check(larder_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, "HEAD"), "method") }
            _ = larder_easy_setopt_long(easy, CURLOPT_NOBODY, 1)
        }
        for field in fields {
            headerList = field.withUnsafeBufferPointer { curl_slist_append(headerList, UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self)) }
        }
        if headerList != nil { _ = larder_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList) }
    }

    /// One field as curl's header list takes it, NUL-terminated, with the value's octets as
    /// received (`FieldText`). An empty value is written `Name;`: curl reads `Name:` as
    /// "do not send this field".
    private static func fieldLine(_ field: (name: String, value: String)) -> [UInt8] {
        var line = Array(field.name.utf8)
        if field.value.isEmpty {
            line.append(UInt8(ascii: ";"))
        } else {
            line += ": ".utf8
            FieldText.append(field.value, to: &line)
        }
        line.append(0)
        return line
    }

    /// A curl-made field (`Accept:` removes curl's own Accept), NUL-terminated.
    private static func curlDirective(_ text: String) -> [UInt8] { Array(text.utf8) + [0] }

    private static func milliseconds(_ d: Duration) -> Int {
        let (s, atto) = d.components
        return max(1, Int(s) * 1000 + Int(atto / 1_000_000_000_000_000))
    }

    // MARK: Callbacks (multi thread)

    /// The largest body this transfer takes, held or spooled.
    var largestBody: Int { spoolDirectory == nil ? maxBodyBytes : max(maxBodyBytes, HeldAnswer.largestSpooled) }

    private func receiveBody(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard let data, count > 0 else { return count }
        let chunk = UnsafeRawBufferPointer(start: data, count: count)
        if let stream {
            guard turnBudget > 0 else {
                paused = true
                return larder_write_pause()  // delivered again once resumed
            }
            if !paced {
                let end = stream.written + count
                // Past what may be stored, or past the room spool files have: at the readers' pace.
                if let storesUpTo, (stream.isOpenEnded ? end - stream.start : stream.length) > storesUpTo { pace(stream) }
                if !paced, !stream.file.reserve(through: end) { pace(stream) }
            }
            if paced, let wake, !stream.mayWrite(count, wake: wake) {
                heldBack = true
                return larder_write_pause()  // delivered again once resumed
            }
            turnBudget -= count
            // Past its length, refused by the disk, or read by nobody any more: the transfer fails.
            return stream.append(chunk) ? count : 0
        }
        if startOpenEndedStream(adding: count) { return receiveBody(data, count) }
        guard body.count + spooled + count <= largestBody else {
            bodyTooLarge = true
            return 0  // curl aborts with CURLE_WRITE_ERROR
        }
        guard spool != nil || body.count + count > maxBodyBytes else {
            body.append(contentsOf: chunk)
            return count
        }
        // Past what is held in memory: what was held moves to the file, and the rest follows it.
        // The write goes to the page cache, so it costs the loop a copy, not a wait on the disk.
        if spool == nil {
            guard let directory = spoolDirectory, let file = spoolFile(in: directory) else {
                spoolFailure = "no spool file could be made in \(spoolDirectory ?? "")"
                return 0
            }
            guard body.withUnsafeBytes({ file.write($0, at: file.headRoom) }) else {
                spoolFailure = "writing the spool file failed: \(String(cString: strerror(errno)))"
                return 0
            }
            spool = file
            spooled = body.count
            body = []
        }
        // Taken whole before it is answered, it cannot wait for a reader: past the room, it fails.
        guard spool!.reserve(through: spool!.headRoom + spooled + count) else {
            spoolFailure = "the disk budget is held by answers being fetched"
            return 0
        }
        guard spool!.write(chunk, at: spool!.headRoom + spooled) else {
            spoolFailure = "writing the spool file failed: \(String(cString: strerror(errno)))"
            return 0
        }
        spooled += count
        return count
    }

    private func receiveHeaderLine(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard let data else { return count }
        let line = UnsafeRawBufferPointer(start: data, count: count)
        head.add(line: line)
        // A malformed head stops the transfer at once; `outcome` reports why.
        guard head.violation == nil else { return 0 }
        if streamsFrom != nil, line.allSatisfy({ $0 == 0x0D || $0 == 0x0A }), ReceivedFields.isFinalStatus(head.latestStatus) {
            headDone = true
            startStreamIfLarge()
            // What curl's own length check (off for this transfer) would have refused at once;
            // a 304's or 204's length is not of a body that follows.
            if stream == nil, head.latestStatus != 304, head.latestStatus != 204, let length = head.declaredLength, length > largestBody {
                bodyTooLarge = true
                return 0
            }
        }
        return count
    }

    /// Non-zero (abort) once the head deadline passed with no final head.
    private func checkHeadDeadline() -> Int32 {
        guard !headDone, let headDeadline, MonotonicClock.nanoseconds() > headDeadline else { return 0 }
        headTimedOut = true
        return 1
    }

    /// At the end of a head: a final 200 large enough to stream goes to the caller now, its
    /// body a stream the rest of the transfer fills. Of any length: one over the most an
    /// answer may be stored at (`HeldAnswer.largestSpooled`) is relayed and not stored.
    private func startStreamIfLarge() {
        guard let streamsFrom, let continuation, head.latestStatus == 200, let length = head.declaredLength,
              length >= streamsFrom,
              let directory = spoolDirectory, let file = spoolFile(in: directory) else { return }
        hand(BodyStream(file: file, length: length, start: file.headRoom), count: length, to: continuation)
    }

    /// An answer with no `Content-Length` (chunked, or ended by the origin's close): once more
    /// than `streamsFrom` of it would be held, it goes to the caller now, its body an
    /// open-ended stream (`StreamRegion.toTheEnd`) that begins with what was held and that
    /// the rest fills, however long. Smaller ones are still taken whole, so that an origin
    /// failing before their end is still a 502 rather than a body cut short.
    private func startOpenEndedStream(adding count: Int) -> Bool {
        guard stream == nil, let streamsFrom, let continuation, headDone, head.latestStatus == 200, head.declaredLength == nil,
              spool == nil, body.count + count > streamsFrom,
              let directory = spoolDirectory, let file = spoolFile(in: directory) else { return false }
        let stream = BodyStream(file: file, length: StreamRegion.toTheEnd, openEnded: true, start: file.headRoom)
        guard body.withUnsafeBytes({ stream.append($0) }) else { return false }
        body = []
        hand(stream, count: StreamRegion.toTheEnd, to: continuation)
        return true
    }

    private func spoolFile(in directory: String) -> BodyFile? {
        BodyFile.spool(in: directory, headRoom: HeldAnswer.spoolHeadRoom, room: spoolRoom)
    }

    /// From now on the stream goes at its readers' pace: it will not be stored, and the room
    /// it took is kept until it closes.
    private func pace(_ stream: BodyStream) {
        paced = true
        stream.pace()
    }

    /// The caller gets the answer now, its body `stream`, which the rest of the transfer fills.
    private func hand(_ stream: BodyStream, count: Int, to continuation: CheckedContinuation<UpstreamResponse, any Error>) {
        self.stream = stream
        self.continuation = nil
        continuation.resume(returning: UpstreamResponse(status: 200, headers: head.fields,
                                                        body: .stream(StreamRegion(stream: stream, offset: stream.start, count: count,
                                                                                   interest: StreamInterest(stream))),
                                                        requestTime: requestTime, responseTime: Date(), interim: head.interim))
    }

    /// What the transfer waited for happened; on the driver's thread. Not `CURLE_OK` when it
    /// cannot go on: libcurl hands over what it held back as it resumes, and a stream nobody
    /// reads any more refuses it, which libcurl reports to this call alone.
    func resumeWaiting() -> CURLcode {
        guard uploadWaiting || heldBack else { return CURLE_OK }
        uploadWaiting = false
        heldBack = false
        return larder_easy_unpause(easy)
    }

    /// Lets a paused stream go on, with a new turn's budget; on the driver's thread.
    func resume() {
        turnBudget = Self.bytesPerTurn
        guard paused else { return }
        paused = false
        _ = larder_easy_unpause(easy)
    }

    /// The transfer is over: a stream ends, whole only when it succeeded.
    func ended(succeeded: Bool) {
        stream?.finish(succeeded: succeeded)
    }

    /// Gives the easy handle back and frees everything it pointed at; called once, on the
    /// multi thread, after the handle is off the multi handle.
    func release() {
        handles.give(easy)
        curl_slist_free_all(headerList)
        headerList = nil
        errorBuffer.deallocate()
    }
}
