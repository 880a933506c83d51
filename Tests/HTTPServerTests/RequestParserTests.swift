import HTTPCore
import Bodies
import Testing
@testable import HTTPServer

/// Feeds `chunks` one after another, collecting every request until the parser wants more or fails.
private func parse(_ chunks: [ArraySlice<UInt8>], limits: RequestParser.Limits = .standard) -> (requests: [HTTPRequest], error: HTTPParseError?) {
    var parser = RequestParser(limits: limits)
    var buffer = InputBuffer()
    var requests: [HTTPRequest] = []
    for chunk in chunks {
        buffer.append(chunk)
        loop: while true {
            switch parser.next(&buffer) {
            case .needMore: break loop
            case .request(let request): requests.append(request)
            case .bodyEnded: continue
            case .failure(let error): return (requests, error)
            }
        }
    }
    return (requests, nil)
}

private func parse(_ text: String, limits: RequestParser.Limits = .standard) -> (requests: [HTTPRequest], error: HTTPParseError?) {
    parse([ArraySlice(text.utf8)], limits: limits)
}

extension RequestParser.Limits {
    static let standard = RequestParser.Limits(maxRequestLineBytes: 8192, maxHeaderBytes: 16384, maxHeaderCount: 100, maxBodyBytes: 1 << 20)
}

private func same(_ a: [HTTPRequest], _ b: [HTTPRequest]) -> Bool {
    a.count == b.count && zip(a, b).allSatisfy { RequestParser.Step.request($0) == .request($1) }
}

@Suite(.timeLimit(.minutes(1))) struct RequestParserTests {
    static let validExamples = [
        "GET /weather?lat=52.52&lon=13.41 HTTP/1.1\r\nHost: localhost\r\nAccept: */*\r\n\r\n",
        "GET / HTTP/1.0\r\n\r\n",
        "\r\nGET /after-empty-line HTTP/1.1\r\nHost: a\r\n\r\n",
        "POST /submit HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nhello world",
        "PUT /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nTrailer-Field: x\r\n\r\n",
        "GET http://example.com:8080/abs?x=1 HTTP/1.1\r\nHost: ignored\r\n\r\n",
        "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET /a HTTP/1.1\r\nHost: a\r\nX-Repeat: 1\r\nx-repeat: 2\r\nEmpty:\r\nTabs:\t v \t\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n",
        "BREW /pot HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\nGET / HTTP/1.1\r\nHost:\r\n\r\nGET / HTTP/1.1\r\nHost: xn--bcher-kva.example:80\r\n\r\n",
    ]

    @Test(arguments: validExamples)
    func validRequestParsesIdenticallyAtEverySplit(_ example: String) {
        let bytes = Array(example.utf8)
        let whole = parse([bytes[...]])
        #expect(whole.error == nil)
        #expect(!whole.requests.isEmpty)
        for split in 0...bytes.count {
            let result = parse([bytes[0..<split], bytes[split...]])
            #expect(result.error == nil, "split at \(split)")
            #expect(same(result.requests, whole.requests), "split at \(split)")
        }
        let byteByByte = parse(bytes.indices.map { bytes[$0...$0] })
        #expect(same(byteByByte.requests, whole.requests))
    }

    @Test func fieldsAreParsedAsSent() throws {
        let result = parse(Self.validExamples[7])
        #expect(result.requests.count == 2)
        let first = try #require(result.requests.first)
        #expect(first.method == .get)
        #expect(first.path == "/a")
        #expect(first.headers.values("x-repeat") == ["1", "2"])
        #expect(first.headers["EMPTY"] == "")
        #expect(first.headers["tabs"] == "v")
        #expect(result.requests[1].path == "/b")
    }

    @Test func fieldNamesKeepTheSpellingSent() throws {
        // Common names are interned when spelled the usual way; any other spelling is kept.
        let request = try #require(parse("GET / HTTP/1.1\r\nhOST: a\r\nUser-Agent: u\r\nuser-agent: v\r\nX-Other: w\r\n\r\n").requests.first)
        #expect(request.headers.map(\.name) == ["hOST", "User-Agent", "user-agent", "X-Other"])
        #expect(request.headers.values("USER-AGENT") == ["u", "v"])
    }

    @Test func trailerFieldsDoNotFrameTheRequest() throws {
        // Framing is read from the header section only: a Host or Content-Length in the
        // trailers neither makes a second Host nor a conflicting length.
        let chunked = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n"
        let requests = parse(chunked + "Host: b\r\nContent-Length: 9\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(requests.error == nil)
        #expect(requests.requests.map(\.path) == ["/", "/next"])
        #expect(requests.requests.first?.body == .bytes([0x78]))
    }

    @Test func eachRequestIsFramedByItsOwnFields() {
        // A field of one request must not carry over into the next one's framing.
        let two = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\nokGET /b HTTP/1.1\r\nHost: a\r\n\r\n"
        let result = parse(two)
        #expect(result.error == nil)
        #expect(result.requests.map(\.body.count) == [2, 0])
        #expect(parse("GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\n\r\n").error?.status == 400)  // the second has no Host
    }

    @Test func targetsSplitAtTheFirstQuestionMark() {
        let cases: [(String, String, String?)] = [
            ("/a", "/a", nil), ("/a?", "/a", ""), ("/a?b?c", "/a", "b?c"), ("/?x=1", "/", "x=1"),
            ("/é?q=ü", "/é", "q=ü"), ("*", "*", nil),
        ]
        for (target, path, query) in cases {
            let request = HTTPRequest(method: .get, target: target)
            #expect(request.path == path[...], "\(target)")
            #expect(request.query == query.map { $0[...] }, "\(target)")
        }
    }

    @Test func bodiesAreDecoded() throws {
        let fixed = try #require(parse(Self.validExamples[3]).requests.first)
        #expect(fixed.body == .bytes(Array("hello world".utf8)))
        let chunked = try #require(parse(Self.validExamples[4]).requests.first)
        #expect(chunked.body == .bytes(Array("hello world".utf8)))
        #expect(chunked.headers["trailer-field"] == nil)
    }

    @Test func absoluteFormUsesItsAuthority() throws {
        let request = try #require(parse(Self.validExamples[5]).requests.first)
        #expect(request.target == "/abs?x=1")
        #expect(request.query == "x=1")
        #expect(request.headers.values("host") == ["example.com:8080"])
    }

    @Test func keepAliveFollowsVersionAndConnection() throws {
        #expect(try #require(parse("GET / HTTP/1.1\r\nHost: a\r\n\r\n").requests.first).keepAlive)
        #expect(try !#require(parse("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").requests.first).keepAlive)
        #expect(try !#require(parse("GET / HTTP/1.0\r\n\r\n").requests.first).keepAlive)
        #expect(try #require(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").requests.first).keepAlive)
    }

    static let malformed: [(String, Int, String)] = [
        ("GET /\r\n\r\n", 400, "request line without version"),
        ("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "double space in request line"),
        ("G(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "method not a token"),
        ("GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", 400, "space in target"),
        ("GET nope HTTP/1.1\r\nHost: a\r\n\r\n", 400, "target not origin-form"),
        ("GET / HTTP/1.1\nHost: a\r\n\r\n", 400, "bare LF"),
        ("GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", 400, "bare CR"),
        ("GET / HTTP/1.1\r\nHost: a\r\nX\r\n\r\n", 400, "header without colon"),
        ("GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400, "whitespace before colon"),
        ("GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n  folded\r\n\r\n", 400, "obs-fold"),
        ("GET / HTTP/1.1\r\nHost: a\r\nX-A: a\u{1}b\r\n\r\n", 400, "control character in value"),
        ("GET / HTTP/1.1\r\n\r\n", 400, "missing Host"),
        ("GET / HTTP/1.1\r\nHost: evil.com/../x\r\n\r\n", 400, "a path in Host"),
        ("GET / HTTP/1.1\r\nHost: a@b\r\n\r\n", 400, "userinfo in Host"),
        ("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400, "space in Host"),
        ("GET /page#top HTTP/1.1\r\nHost: a\r\n\r\n", 400, "fragment in the target"),
        ("GET http://a/b#c HTTP/1.1\r\nHost: a\r\n\r\n", 400, "fragment in an absolute target"),
        ("CONNECT /x HTTP/1.1\r\nHost: a\r\n\r\n", 501, "CONNECT"),
        ("CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", 501, "CONNECT in authority-form"),
        ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "two Host fields"),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400, "conflicting Content-Length"),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", 400, "duplicate Content-Length"),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\n\r\nabc", 400, "list-valued Content-Length"),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400, "negative Content-Length"),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "Content-Length with Transfer-Encoding"),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 400, "final coding not chunked"),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400, "chunked twice"),
        ("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "Transfer-Encoding in HTTP/1.0"),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400, "chunk size not hex"),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n", 400, "chunk data without CRLF"),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: br\r\n\r\n", 501, "unknown transfer coding"),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501, "coding under chunked"),
        ("GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505, "HTTP/2.0"),
        ("GET / HTTP/0.9\r\n\r\n", 505, "HTTP/0.9"),
        ("GET / HTTP/1.12\r\nHost: a\r\n\r\n", 400, "malformed version"),
        ("GET / http/1.1\r\nHost: a\r\n\r\n", 400, "lower-case protocol name"),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n", 413, "huge Content-Length"),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5 garbage\r\nabcde\r\n0\r\n\r\n", 400, "chunk size then garbage"),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5 \r\nabcde\r\n0\r\n\r\n", 400, "chunk size then a space"),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nabcde\r\n0\r\n\r\n", 400, "chunk size with 0x"),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n+5\r\nabcde\r\n0\r\n\r\n", 400, "chunk size with a sign"),
        ("\u{16}\u{3}\u{1}\u{2}\u{0}\u{1}\u{0}\u{1}\u{fc}\u{3}\u{3}", 400, "a TLS ClientHello"),
        ("\r\n\u{0}GET / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "NUL after a blank line"),
    ]

    @Test func chunkExtensionsAreAccepted() {
        let request = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;name=value\r\nabcde\r\n3 ; x\r\nfgh\r\n0\r\n\r\n"
        #expect(parse(request).requests.first?.body == .bytes(Array("abcdefgh".utf8)))
    }

    /// 16 KiB of chunk extensions in all pass; one byte more is 400, counted across chunks
    /// (the bytes after each size's digits) and afresh for the next request.
    @Test func chunkExtensionsAreLimitedInAll() {
        let head = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
        func body(extraByte: Bool) -> String {
            // Four size lines at the 4 KiB line limit (4,095 bytes after the digit), then 4 bytes more.
            let line = ";" + String(repeating: "e", count: 4094)
            let text = String(repeating: "1" + line + "\r\nx\r\n", count: 4)
            return text + "1;eee" + (extraByte ? "e" : "") + "\r\nx\r\n0\r\n\r\n"
        }
        let twice = parse(head + body(extraByte: false) + head + body(extraByte: false))
        #expect(twice.requests.count == 2 && twice.requests.allSatisfy { $0.body == .bytes(Array("xxxxx".utf8)) })
        let over = parse(head + body(extraByte: true))
        #expect(over.requests.isEmpty && over.error?.status == 400)
    }

    @Test func aFirstByteThatCannotStartARequestFailsAtOnce() {
        // Only the first byte has arrived: no need to wait for the rest of a line.
        #expect(parse([[0x16][...]]).error?.status == 400)
    }

    @Test func blankLinesStartTheRequest() {
        var parser = RequestParser(configuration: HTTPServerConfiguration())
        var buffer = InputBuffer()
        buffer.append(Array("\r\n\r\n".utf8))
        #expect(parser.next(&buffer) == .needMore)
        #expect(parser.readingHead)
    }

    @Test(arguments: malformed)
    func malformedRequestIsRejected(_ example: (String, Int, String)) {
        let bytes = Array(example.0.utf8)
        let result = parse([bytes[...]])
        #expect(result.error?.status == example.1, "\(example.2)")
        // Arriving in pieces changes nothing.
        #expect(parse(bytes.indices.map { bytes[$0...$0] }).error?.status == example.1, "\(example.2), byte by byte")
    }

    // MARK: Limits, at the limit and one byte over

    private func requestLine(length: Int) -> String {
        let fixed = "GET / HTTP/1.1".utf8.count
        return "GET /" + String(repeating: "a", count: length - fixed) + " HTTP/1.1"
    }

    @Test func requestLineAtTheLimitIsAccepted() {
        let line = requestLine(length: 8192)
        #expect(line.utf8.count == 8192)
        #expect(parse(line + "\r\nHost: a\r\n\r\n").requests.count == 1)
    }

    @Test func requestLineOneByteOverIs414() {
        let line = requestLine(length: 8193)
        #expect(parse(line + "\r\nHost: a\r\n\r\n").error?.status == 414)
        // Also before the line ends: the server does not wait for a line it will refuse.
        #expect(parse(line).error?.status == 414)
        #expect(parse(requestLine(length: 8192)).error == nil)
    }

    /// Header block of exactly `bytes` bytes (every field line with its CRLF, Host included).
    private func headerBlock(bytes: Int) -> String {
        let host = "Host: a\r\n"
        let filler = bytes - host.utf8.count - "X: \r\n".utf8.count
        return host + "X: " + String(repeating: "v", count: filler) + "\r\n"
    }

    @Test func headerBlockAtTheLimitIsAccepted() {
        let block = headerBlock(bytes: 16384)
        #expect(block.utf8.count == 16384)
        #expect(parse("GET / HTTP/1.1\r\n" + block + "\r\n").requests.count == 1)
    }

    @Test func headerBlockOneByteOverIs431() {
        #expect(parse("GET / HTTP/1.1\r\n" + headerBlock(bytes: 16385) + "\r\n").error?.status == 431)
        #expect(parse("GET / HTTP/1.1\r\n" + headerBlock(bytes: 16385)).error?.status == 431)
    }

    private func fields(_ count: Int) -> String {
        "Host: a\r\n" + (1..<count).map { "X-\($0): v\r\n" }.joined()
    }

    @Test func headerCountAtTheLimitIsAccepted() {
        #expect(parse("GET / HTTP/1.1\r\n" + fields(100) + "\r\n").requests.first?.headers.count == 100)
    }

    @Test func headerCountOneOverIs431() {
        #expect(parse("GET / HTTP/1.1\r\n" + fields(101) + "\r\n").error?.status == 431)
    }

    @Test func bodyAtTheLimitIsAccepted() {
        let body = String(repeating: "b", count: 1 << 20)
        #expect(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \(1 << 20)\r\n\r\n" + body).requests.first?.body.count == 1 << 20)
        let chunked = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "80000\r\n" + String(body.prefix(1 << 19)) + "\r\n80000\r\n" + String(body.prefix(1 << 19)) + "\r\n0\r\n\r\n"
        #expect(parse(chunked).requests.first?.body.count == 1 << 20)
    }

    @Test func bodyOneByteOverIs413() {
        #expect(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \((1 << 20) + 1)\r\n\r\n").error?.status == 413)
        let chunked = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "80000\r\n" + String(repeating: "b", count: 1 << 19) + "\r\n80001\r\n"
        #expect(parse(chunked).error?.status == 413)
    }

    @Test func expectContinueIsNoticedOnlyWhenABodyFollows() {
        var parser = RequestParser(limits: .standard)
        var buffer = InputBuffer()
        buffer.append("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n".utf8)
        #expect(parser.next(&buffer) == .needMore)
        #expect(parser.wantsContinue)
        buffer.append("ok".utf8)
        guard case .request(let request) = parser.next(&buffer) else { Issue.record("no request"); return }
        #expect(request.body == .bytes(Array("ok".utf8)))
        #expect(!parser.wantsContinue)
    }
}
