import HTTPCore

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
        case failure(HTTPParseError)

        static func == (a: Step, b: Step) -> Bool {
            switch (a, b) {
            case (.needMore, .needMore): true
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

    struct Limits {
        var maxRequestLineBytes: Int
        var maxHeaderBytes: Int
        var maxHeaderCount: Int
        var maxBodyBytes: Int
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
    private var body: [UInt8] = []
    private var keepAlive = true
    /// True between the end of a header block and its first body byte when the client sent
    /// `Expect: 100-continue`; the connection answers `100 Continue` once and clears it.
    var wantsContinue = false
    /// True once any byte of a request has been consumed and the request is not complete.
    private(set) var inProgress = false

    init(limits: Limits) { self.limits = limits }

    init(configuration c: HTTPServerConfiguration) {
        self.init(limits: Limits(maxRequestLineBytes: c.maxRequestLineBytes, maxHeaderBytes: c.maxHeaderBytes,
                                 maxHeaderCount: c.maxHeaderCount, maxBodyBytes: c.maxBodyBytes))
    }

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
                    if let error = parseRequestLine(buffer.slice(0..<length)) { return .failure(error) }
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
                    let line = buffer.slice(0..<length)
                    buffer.consume(length + 2)
                    if length == 0 {
                        if case .trailers = state { return .request(finish()) }
                        if let error = startBody() { return .failure(error) }
                        continue
                    }
                    headerBytes += length + 2
                    if let error = parseField(line, keep: !inTrailers) {
                        return .failure(error)
                    }
                }

            case .fixedBody(let remaining):
                if remaining == 0 { return .request(finish()) }
                let n = min(remaining, buffer.count)
                if n == 0 { return .needMore }
                wantsContinue = false
                body.append(contentsOf: buffer.slice(0..<n))
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
                    guard let size = Self.parseChunkSize(buffer.slice(0..<length)) else {
                        return .failure(.bad("A chunk size is not a hexadecimal number."))
                    }
                    buffer.consume(length + 2)
                    if size == 0 {
                        state = .trailers
                    } else if size > limits.maxBodyBytes - body.count {
                        return .failure(.bodyTooLarge)
                    } else {
                        state = .chunkData(remaining: size)
                    }
                }

            case .chunkData(let remaining):
                let n = min(remaining, buffer.count)
                if n == 0 { return .needMore }
                body.append(contentsOf: buffer.slice(0..<n))
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

    private mutating func parseRequestLine(_ line: ArraySlice<UInt8>) -> HTTPParseError? {
        // method SP request-target SP HTTP-version, with exactly one space between (RFC 9112 §3).
        guard let firstSpace = line.firstIndex(of: 0x20),
              let secondSpace = line[(firstSpace + 1)...].firstIndex(of: 0x20),
              !line[(secondSpace + 1)...].contains(0x20) else {
            return .bad("The request line is not `method SP target SP version`.")
        }
        let methodBytes = line[line.startIndex..<firstSpace]
        let targetBytes = line[(firstSpace + 1)..<secondSpace]
        let v = line[(secondSpace + 1)...]
        guard !methodBytes.isEmpty, !targetBytes.isEmpty else {
            return .bad("The request line is not `method SP target SP version`.")
        }
        guard methodBytes.allSatisfy(FieldSyntax.isTokenByte) else { return .bad("The method is not a token.") }
        guard targetBytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return .bad("The request target contains a byte that is not allowed.")
        }
        let o = v.startIndex
        guard v.count == 8, v[o] == 0x48, v[o + 1] == 0x54, v[o + 2] == 0x54, v[o + 3] == 0x50, v[o + 4] == 0x2F,  // "HTTP/"
              FieldSyntax.isDigit(v[o + 5]), v[o + 6] == 0x2E, FieldSyntax.isDigit(v[o + 7]) else {
            return .bad("The HTTP version is malformed.")
        }
        switch (v[o + 5], v[o + 7]) {
        case (0x31, 0x31): version = .http11
        case (0x31, 0x30): version = .http10
        default: return .versionNotSupported
        }
        method = HTTPMethod(bytes: methodBytes)
        let rawTarget = String(decoding: targetBytes, as: UTF8.self)
        // On the bytes: every request asks, and String's prefix test goes by characters.
        if targetBytes.first == 0x2F {
            target = rawTarget
        } else if targetBytes.count == 1, targetBytes.first == 0x2A, method == .options {
            target = rawTarget
        } else if let absolute = Self.originForm(ofAbsolute: rawTarget) {
            target = absolute.target
            headers.add("Host", absolute.authority)  // RFC 9112 §3.2.2: the target's authority wins.
            absoluteAuthority = true
        } else {
            return .bad("The request target is not in origin-form or absolute-form.")
        }
        return nil
    }

    private var absoluteAuthority = false

    /// Trailer fields are checked like header fields and then dropped: nothing here needs them.
    private var inTrailers: Bool {
        if case .trailers = state { true } else { false }
    }

    /// `http://host:port/path?q` → (authority, `/path?q`).
    static func originForm(ofAbsolute target: String) -> (authority: String, target: String)? {
        let lower = target.lowercased()
        let scheme = lower.hasPrefix("http://") ? 7 : lower.hasPrefix("https://") ? 8 : 0
        guard scheme > 0 else { return nil }
        let rest = target.dropFirst(scheme)
        let end = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = String(rest[..<end])
        guard !authority.isEmpty else { return nil }
        var path = String(rest[end...])
        if !path.hasPrefix("/") { path = "/" + path }
        return (authority, path)
    }

    // MARK: Header fields (RFC 9112 §5, RFC 9110 §5.5)

    private mutating func parseField(_ line: ArraySlice<UInt8>, keep: Bool) -> HTTPParseError? {
        guard headers.count < limits.maxHeaderCount + (absoluteAuthority ? 1 : 0) else { return .tooManyHeaders }
        let first = line[line.startIndex]
        if first == 0x20 || first == 0x09 {
            return .bad("A header line starts with whitespace (obsolete line folding is not accepted).")
        }
        guard let colon = line.firstIndex(of: 0x3A) else { return .bad("A header line has no colon.") }
        let name = line[line.startIndex..<colon]
        guard !name.isEmpty else { return .bad("A header field has an empty name.") }
        if let last = name.last, last == 0x20 || last == 0x09 {
            return .bad("Whitespace between a header field name and the colon is not allowed.")
        }
        guard name.withUnsafeBufferPointer({ $0.allSatisfy(FieldSyntax.isTokenByte) }) else { return .bad("A header field name is not a token.") }
        var value = line[(colon + 1)...]
        while let f = value.first, f == 0x20 || f == 0x09 { value.removeFirst() }
        while let l = value.last, l == 0x20 || l == 0x09 { value.removeLast() }
        // One pass over the value: controls are refused, obs-text noted for the decoding.
        var highBytes = false
        let valid = value.withUnsafeBufferPointer { bytes in
            for byte in bytes {
                if byte >= 0x80 { highBytes = true } else if !FieldSyntax.isValueByte(byte) { return false }
            }
            return true
        }
        guard valid else { return .bad("A header field value contains a control character.") }
        if keep {
            // One allocation for the few fields of a usual request.
            if headers.isEmpty { headers.reserveCapacity(8) }
            let nameString = String(decoding: name, as: UTF8.self)
            if absoluteAuthority, HTTPHeaders.namesEqual(nameString, "host") { return nil }
            headers.add(nameString, highBytes ? FieldText.decode(value) : String(decoding: value, as: UTF8.self))
        }
        return nil
    }

    // MARK: Message body framing (RFC 9112 §6)

    /// What the framing rules need from the header fields, gathered in one pass.
    private struct Framing {
        var hosts = 0
        var contentLengths: [String] = []
        var transferEncoding = false
        var codings: [String] = []
        var expectContinue = false
        var connectionClose = false
        var connectionKeepAlive = false

        init(_ headers: HTTPHeaders) {
            for field in headers {
                switch field.name.utf8.count {
                case 4 where HTTPHeaders.namesEqual(field.name, "host"): hosts += 1
                case 6 where HTTPHeaders.namesEqual(field.name, "expect"):
                    expectContinue = expectContinue || Self.tokens(field.value).contains("100-continue")
                case 10 where HTTPHeaders.namesEqual(field.name, "connection"):
                    for token in Self.tokens(field.value) {
                        if token == "close" { connectionClose = true } else if token == "keep-alive" { connectionKeepAlive = true }
                    }
                case 14 where HTTPHeaders.namesEqual(field.name, "content-length"): contentLengths.append(field.value)
                case 17 where HTTPHeaders.namesEqual(field.name, "transfer-encoding"):
                    transferEncoding = true
                    codings += Self.tokens(field.value)
                default: break
                }
            }
        }

        /// The lower-cased members of a comma-separated field value.
        static func tokens(_ value: String) -> [String] {
            value.split(separator: ",").map { $0.trimmingOWS().lowercased() }.filter { !$0.isEmpty }
        }
    }

    private mutating func startBody() -> HTTPParseError? {
        let framing = Framing(headers)
        if version == .http11, framing.hosts == 0 { return .bad("HTTP/1.1 requests must carry a Host header.") }
        if framing.hosts > 1 { return .bad("A request must carry exactly one Host header.") }
        keepAlive = HTTPRequest.keepAlive(version: version, close: framing.connectionClose, keepAlive: framing.connectionKeepAlive)

        let lengths = framing.contentLengths
        let codings = framing.codings
        if !lengths.isEmpty, framing.transferEncoding {
            return .bad("Content-Length and Transfer-Encoding together are not allowed.")
        }
        if framing.transferEncoding {
            if version == .http10 { return .bad("Transfer-Encoding is not allowed in HTTP/1.0.") }
            guard let final = codings.last else { return .bad("Transfer-Encoding is empty.") }
            if final != "chunked" {
                return Self.knownCodings.contains(final) ? .bad("The final transfer coding must be chunked.") : .unknownTransferCoding
            }
            // chunked must be applied exactly once (RFC 9112 §6.1); any coding under it we cannot undo.
            if codings.dropLast().contains("chunked") { return .bad("chunked is applied more than once.") }
            if codings.count > 1 { return .unknownTransferCoding }
            state = .chunkSize
        } else if let raw = lengths.first {
            guard lengths.count == 1 else { return .bad("More than one Content-Length header.") }
            guard !raw.isEmpty, raw.utf8.count <= 18, raw.utf8.allSatisfy(FieldSyntax.isDigit), let length = Int(raw) else {
                return raw.utf8.allSatisfy(FieldSyntax.isDigit) && !raw.isEmpty ? .bodyTooLarge
                    : .bad("Content-Length is not a non-negative integer.")
            }
            if length > limits.maxBodyBytes { return .bodyTooLarge }
            state = .fixedBody(remaining: length)
        } else {
            state = .fixedBody(remaining: 0)
        }
        if framing.expectContinue {
            if case .fixedBody(0) = state {} else { wantsContinue = true }
        }
        return nil
    }

    private static let knownCodings: Set<String> = ["chunked", "gzip", "x-gzip", "deflate", "compress", "x-compress", "identity"]

    /// `1a;ext=1` → 26: hex digits, then nothing or `;` extensions (RFC 9112 §7.1.1, with
    /// the optional whitespace before `;` that its BWS allows), then the line ends. Anything
    /// else (`5 garbage`, `0x5`, `+5`) is nil. At most 15 hex digits, so it never overflows.
    static func parseChunkSize(_ line: ArraySlice<UInt8>) -> Int? {
        var size = 0
        var digits = 0
        var index = line.startIndex
        while index < line.endIndex, let d = FieldSyntax.hexValue(line[index]) {
            guard digits < 15 else { return nil }
            size = size << 4 | d
            digits += 1
            index += 1
        }
        while index < line.endIndex, line[index] == 0x20 || line[index] == 0x09 { index += 1 }
        guard digits > 0, index == line.endIndex || line[index] == 0x3B else { return nil }
        // Extensions are not used here; their bytes only have to be valid in a field.
        guard line[index...].allSatisfy(FieldSyntax.isValueByte) else { return nil }
        if index == line.endIndex, index > line.startIndex, line[index - 1] == 0x20 || line[index - 1] == 0x09 { return nil }
        return size
    }

    private mutating func finish() -> HTTPRequest {
        let request = HTTPRequest(method: method, target: target, version: version, headers: headers, body: body, keepAlive: keepAlive)
        state = .requestLine
        headers = HTTPHeaders()
        body = []
        headerBytes = 0
        absoluteAuthority = false
        wantsContinue = false
        inProgress = false
        return request
    }
}
