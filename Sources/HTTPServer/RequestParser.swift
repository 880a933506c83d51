import Glibc
import HTTPCore
import Bodies

/// Incremental HTTP/1.1 request parser (RFC 9112) working on raw bytes in place.
///
/// A plain value: it is fed an `InputBuffer`, consumes whole lines and body bytes from it,
/// and answers `.needMore`, one `.request`, or a `.failure` after which it must not be
/// used again. A request may arrive one byte at a time or many in one read; the parser
/// never rescans bytes it has already looked at.
struct RequestParser {
    enum Step: Equatable {
        case needMore
        case request(HTTPRequest)
        /// The body of a request dispatched before it (`streamingBody`) has arrived whole.
        case bodyEnded
        case failure(HTTPParseError)

        static func == (a: Step, b: Step) -> Bool {
            switch (a, b) {
            case (.needMore, .needMore), (.bodyEnded, .bodyEnded): true
            case (.failure(let x), .failure(let y)): x == y
            case (.request(let x), .request(let y)):
                x.method == y.method && x.target == y.target && x.version == y.version
                    && x.headers == y.headers && x.body == y.body
            default: false
            }
        }
    }

    private enum State {
        case requestLine
        case headers
        case fixedBody(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
    }

    let limits: Limits
    private var state = State.requestLine
    /// Offset (from the buffer's start) up to which the current line has been searched for LF.
    private var scanned = 0
    private var method = HTTPMethod.get
    private var target = ""
    private var version = HTTPVersion.http11
    private var headers = HTTPHeaders()
    private var headerBytes = 0
    /// Chunk-extension bytes of the current body so far (`maxChunkExtensionBytes`).
    private var chunkExtensionBytes = 0
    private var body: RequestBodyStore
    /// The current request's body limit (`Limits.bodyLimit` for its path, else `maxBodyBytes`).
    private var maxBody = 0
    private var keepAlive = true
    /// True between the end of a header block and its first body byte when the client sent
    /// `Expect: 100-continue`; the connection answers `100 Continue` once and clears it.
    var wantsContinue = false
    /// True once any byte of a request has been consumed and the request is not complete.
    private(set) var inProgress = false

    init(limits: Limits) {
        self.limits = limits
        body = RequestBodyStore(directory: limits.spoolDirectory, room: limits.spoolRoom, held: limits.heldBodyBytes)
    }

    /// A dispatched request's body is arriving; its answer may wait for it (`Connection.State.Load`).
    var streamingBody: Bool { body.upload != nil }

    /// The client is gone or the connection is failing: a streamed body ends short, so the
    /// transfer sending it on stops (`refusal` says how the client is answered for it); a
    /// body being read whole is let go.
    mutating func abandonBody(_ refusal: BodyStream.Refusal? = nil) {
        guard streamingBody else { return body.discard() }
        body.abandon(refusal)
        _ = endStreamedBody()
    }

    /// The body arriving goes to a file, not memory: it need only keep arriving, however long
    /// it takes as a whole.
    var bodyInFile: Bool { body.inFile }

    /// True while a request's head is incomplete (its header-read timeout is running).
    var readingHead: Bool {
        switch state {
        case .requestLine: inProgress
        case .headers: true
        default: false
        }
    }

    /// True while a request's body (or its chunked trailer section) is still arriving: its
    /// bytes must keep coming, or the request times out.
    var readingBody: Bool {
        switch state {
        case .requestLine, .headers: false
        case .fixedBody(let remaining): remaining > 0
        default: true
        }
    }

    /// Parses as far as the buffered bytes allow.
    mutating func next(_ buffer: inout InputBuffer) -> Step {
        while true {
            switch state {
            case .requestLine:
                // RFC 9112 §2.2: ignore empty lines before a request line. They still start
                // the request, and so its header timeout: blank lines cannot keep a
                // connection open forever.
                if !buffer.isEmpty { inProgress = true }
                while buffer.count >= 2, buffer[0] == 0x0D, buffer[1] == 0x0A, scanned == 0 {
                    buffer.consume(2)
                }
                if buffer.count == 1, buffer[0] == 0x0D { return .needMore }
                // A request line starts with a method, a token: anything else (a TLS
                // ClientHello, binary noise) is refused at its first byte, not after a timeout.
                if scanned == 0, !buffer.isEmpty, !FieldSyntax.isTokenByte(buffer[0]), buffer[0] != 0x0D, buffer[0] != 0x0A {
                    return .failure(.bad("This is not an HTTP/1.1 request."))
                }
                switch nextLine(buffer, limit: limits.maxRequestLineBytes) {
                case .needMore: return .needMore
                case .tooLong: return .failure(.uriTooLong)
                case .invalid(let e): return .failure(e)
                case .line(let length):
                    let error = buffer.withUnsafeBytes { parseRequestLine(UnsafeBufferPointer(rebasing: $0[..<length])) }
                    if let error { return .failure(error) }
                    buffer.consume(length + 2)
                    state = .headers
                }

            case .headers, .trailers:
                let budget = limits.maxHeaderBytes - headerBytes
                switch nextLine(buffer, limit: max(0, budget - 2)) {
                case .needMore: return .needMore
                case .tooLong: return .failure(.headersTooLarge)
                case .invalid(let e): return .failure(e)
                case .line(let length):
                    if length == 0 {
                        buffer.consume(2)
                        if case .trailers = state { return streamingBody ? endStreamedBody() : .request(finish()) }
                        if let error = startBody() { return .failure(error) }
                        if let upload = body.upload { return .request(takeRequest(body: .stream(StreamRegion(stream: upload, count: upload.length)))) }
                        continue
                    }
                    headerBytes += length + 2
                    let keep = !inTrailers
                    let error = buffer.withUnsafeBytes { parseField(UnsafeBufferPointer(rebasing: $0[..<length]), keep: keep) }
                    if let error { return .failure(error) }
                    buffer.consume(length + 2)
                }

            case .fixedBody(let remaining):
                // A streamed body's request went out at the end of its head.
                if remaining == 0 { return streamingBody ? endStreamedBody() : .request(finish()) }
                let n = min(remaining, buffer.count)
                if n == 0 { return .needMore }
                wantsContinue = false
                guard buffer.withUnsafeBytes({ body.append(UnsafeBufferPointer(rebasing: $0[..<n])) }) else { return .failure(body.failure) }
                buffer.consume(n)
                state = .fixedBody(remaining: remaining - n)

            case .chunkSize:
                // A chunk-size line with extensions; 4 KiB is far beyond any honest one.
                switch nextLine(buffer, limit: 4096) {
                case .needMore: return .needMore
                case .tooLong: return .failure(.bad("A chunk size line is too long."))
                case .invalid(let e): return .failure(e)
                case .line(let length):
                    wantsContinue = false
                    guard let (size, extensions) = Self.parseChunkSize(buffer.slice(0..<length)) else {
                        return .failure(.bad("A chunk size is not a hexadecimal number."))
                    }
                    chunkExtensionBytes += extensions
                    guard chunkExtensionBytes <= Self.maxChunkExtensionBytes else {
                        return .failure(.bad("The chunk extensions are longer than 16 KiB in all."))
                    }
                    buffer.consume(length + 2)
                    if size == 0 {
                        state = .trailers
                    } else if size > maxBody - body.count {
                        return .failure(.bodyTooLarge)
                    } else {
                        state = .chunkData(remaining: size)
                    }
                }

            case .chunkData(let remaining):
                let n = min(remaining, buffer.count)
                if n == 0 { return .needMore }
                guard buffer.withUnsafeBytes({ body.append(UnsafeBufferPointer(rebasing: $0[..<n])) }) else { return .failure(body.failure) }
                buffer.consume(n)
                state = remaining == n ? .chunkDataEnd : .chunkData(remaining: remaining - n)

            case .chunkDataEnd:
                guard buffer.count >= 2 else { return .needMore }
                guard buffer[0] == 0x0D, buffer[1] == 0x0A else {
                    return .failure(.bad("Chunk data is not followed by CRLF."))
                }
                buffer.consume(2)
                state = .chunkSize
            }
        }
    }

    // MARK: Lines

    private enum LineResult {
        case needMore
        case line(length: Int)  // excluding CRLF
        case tooLong
        case invalid(HTTPParseError)
    }

    /// Finds the next CRLF-terminated line without rescanning; rejects bare CR and bare LF.
    private mutating func nextLine(_ buffer: InputBuffer, limit: Int) -> LineResult {
        let from = scanned
        let count = buffer.count
        // On the raw bytes: every request runs this over each of its lines.
        let found: LineResult? = buffer.withUnsafeBytes { bytes in
            var i = from
            while i < count {
                let byte = bytes[i]
                if byte > 0x0D { i += 1; continue }
                if byte == 0x0A {
                    guard i > 0, bytes[i - 1] == 0x0D else {
                        return .invalid(.bad("A line ends in a bare LF; HTTP/1.1 lines end in CRLF."))
                    }
                    return i - 1 > limit ? .tooLong : .line(length: i - 1)
                }
                // RFC 9112 §2.2: a CR not followed by LF is invalid.
                if byte == 0x0D, i + 1 < count, bytes[i + 1] != 0x0A {
                    return .invalid(.bad("A bare CR is not allowed in a request."))
                }
                i += 1
            }
            return nil
        }
        if let found {
            scanned = 0
            return found
        }
        // The line will be at least `count` bytes (a final CR is part of CRLF); a final CR
        // is looked at again with the byte after it.
        let content = count > 0 && buffer[count - 1] == 0x0D ? count - 1 : count
        scanned = content
        return content > limit ? .tooLong : .needMore
    }

    // MARK: Request line (RFC 9112 §3)

    private mutating func parseRequestLine(_ line: UnsafeBufferPointer<UInt8>) -> HTTPParseError? {
        let parsed: RequestLine
        switch RequestLine.parse(line) {
        case .failure(let error): return error
        case .success(let line): parsed = line
        }
        (method, version, target) = (parsed.method, parsed.version, parsed.target)
        guard let authority = parsed.authority else { return nil }
        headers.add("Host", authority)  // RFC 9112 §3.2.2: the target's authority wins.
        framing.hosts = 1
        absoluteAuthority = true
        return nil
    }

    private var absoluteAuthority = false

    /// Trailer fields are checked like header fields and then dropped: nothing here needs them.
    private var inTrailers: Bool {
        if case .trailers = state { true } else { false }
    }

    // MARK: Header fields (RFC 9112 §5, RFC 9110 §5.5)

    /// On the line's raw bytes, as every request runs it for each field. Framing is noted
    /// here, from the name's bytes, so no second pass compares every name again.
    private mutating func parseField(_ line: UnsafeBufferPointer<UInt8>, keep: Bool) -> HTTPParseError? {
        guard headers.count < limits.maxHeaderCount + (absoluteAuthority ? 1 : 0) else { return .tooManyHeaders }
        let n = line.count
        if line[0] == 0x20 || line[0] == 0x09 {
            return .bad("A header line starts with whitespace (obsolete line folding is not accepted).")
        }
        var colon = 0
        while colon < n, line[colon] != 0x3A { colon += 1 }
        guard colon < n else { return .bad("A header line has no colon.") }
        guard colon > 0 else { return .bad("A header field has an empty name.") }
        if line[colon - 1] == 0x20 || line[colon - 1] == 0x09 {
            return .bad("Whitespace between a header field name and the colon is not allowed.")
        }
        for i in 0..<colon where !FieldSyntax.isTokenByte(line[i]) { return .bad("A header field name is not a token.") }
        var from = colon + 1, to = n
        while from < to, line[from] == 0x20 || line[from] == 0x09 { from += 1 }
        while to > from, line[to - 1] == 0x20 || line[to - 1] == 0x09 { to -= 1 }
        // One pass over the value: controls are refused, obs-text noted for the decoding.
        var highBytes = false
        for i in from..<to {
            let byte = line[i]
            if byte >= 0x80 { highBytes = true } else if !FieldSyntax.isValueByte(byte) {
                return .bad("A header field value contains a control character.")
            }
        }
        guard keep else { return nil }
        let name = UnsafeBufferPointer(rebasing: line[..<colon])
        if absoluteAuthority, colon == 4, RequestFraming.nameIs(name, "host") { return nil }
        let valueBytes = UnsafeBufferPointer(rebasing: line[from..<to])
        let value = highBytes ? FieldText.decode(valueBytes) : String(decoding: valueBytes, as: UTF8.self)
        // One allocation for the few fields of a usual request.
        if headers.isEmpty { headers.reserveCapacity(8) }
        headers.add(Self.fieldName(name), value)
        framing.note(name, value)
        return nil
    }

    /// A field name as a String: the literal when it is a common one (`KnownFieldNames`),
    /// else as sent.
    static func fieldName(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        KnownFieldNames.literal(bytes) ?? String(decoding: bytes, as: UTF8.self)
    }

    // MARK: Message body framing (RFC 9112 §6)

    private var framing = RequestFraming()

    private mutating func startBody() -> HTTPParseError? {
        if version == .http11, framing.hosts == 0 { return .bad("HTTP/1.1 requests must carry a Host header.") }
        if framing.hosts > 1 { return .bad("A request must carry exactly one Host header.") }
        if framing.invalidHost { return .bad("The Host header is not a host name or address with an optional port.") }
        keepAlive = HTTPRequest.keepAlive(version: version, close: framing.connectionClose, keepAlive: framing.connectionKeepAlive)

        maxBody = limits.maxBodyBytes
        if framing.announcesBody, let limit = limits.bodyLimit { maxBody = limit(HTTPRequest.split(target).0) }
        switch framing.body(version: version, maxBody: maxBody) {
        case .failure(let error): return error
        case .success(.chunked):
            // Read whole before the request goes on, so it goes with its length (many origins
            // take no chunked request); `maxBody` bounds it.
            state = .chunkSize
        case .success(.length(let length)):
            guard !body.streams(length: length) || body.startUpload(length: length) else { return body.failure }
            state = .fixedBody(remaining: length)
        }
        if framing.expectContinue {
            if case .fixedBody(0) = state {} else { wantsContinue = true }
        }
        return nil
    }

    /// The end of a body streamed after its request (whole, or abandoned): ready for the next.
    private mutating func endStreamedBody() -> Step {
        body.endUpload()
        state = .requestLine
        wantsContinue = false
        inProgress = false
        return .bodyEnded
    }

    /// The whole request, leaving the parser empty for the next.
    private mutating func finish() -> HTTPRequest {
        state = .requestLine
        wantsContinue = false
        inProgress = false
        return takeRequest(body: body.take())
    }

    /// The request, its target and fields moved out of the parser rather than copied (a copy
    /// cost a retain and a release for each string and array); a streamed body still arrives.
    private mutating func takeRequest(body content: Body) -> HTTPRequest {
        framing = RequestFraming()
        headerBytes = 0
        chunkExtensionBytes = 0
        absoluteAuthority = false
        return .parsed(method: method, target: Self.take(&target, leaving: ""), version: version,
                       headers: Self.take(&headers, leaving: HTTPHeaders()), body: content, keepAlive: keepAlive)
    }

    private static func take<Value>(_ value: inout Value, leaving empty: Value) -> Value {
        var taken = empty
        swap(&taken, &value)
        return taken
    }
}
