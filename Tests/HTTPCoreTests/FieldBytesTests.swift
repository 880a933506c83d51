import HTTPCore
import Testing

/// The byte-level helpers of the hit path: token bytes by bit mask, field lines rendered
/// straight into bytes.
@Suite struct FieldBytesTests {
    /// Names compare equal when they differ only in the case of ASCII letters, as Strings
    /// and as bytes; `^` and `~` differ by the same bit and are different names.
    @Test func namesCompareCaseInsensitivelyInLettersOnly() {
        let pairs: [(String, String, Bool)] = [("Cache-Control", "cache-control", true), ("ETAG", "etag", true), ("a^b", "a~b", false),
                                               ("a`b", "a@b", false), ("x_y", "x\u{7F}y", false), ("Date", "Dates", false), ("", "", true),
                                               ("Stra\u{DF}e", "STRA\u{DF}E", true), ("\u{E9}", "\u{C9}", false), ("Vary", "Varz", false)]
        for (a, b, equal) in pairs {
            #expect(HTTPHeaders.namesEqual(a, b) == equal, "\(a) \(b)")
            #expect(HTTPHeaders.namesEqual(b, a) == equal, "\(b) \(a)")
            let bytes = Array(a.utf8).withUnsafeBufferPointer { x in Array(b.utf8).withUnsafeBufferPointer { HTTPHeaders.namesEqual(x, $0) } }
            #expect(bytes == equal, "\(a) \(b) as bytes")
        }
    }

    /// A common name is taken as its literal only when spelt exactly so; the literals are tokens.
    @Test func knownFieldNamesAreTakenOnlyWhenSpeltExactly() {
        let names = ["Age", "Host", "Date", "ETag", "Vary", "Accept", "Server", "Expires", "User-Agent", "Connection", "Content-Type",
                     "Cache-Control", "If-None-Match", "Authorization", "Last-Modified", "Content-Length", "Accept-Encoding",
                     "Accept-Language"]
        func literal(_ text: String) -> String? { Array(text.utf8).withUnsafeBufferPointer(KnownFieldNames.literal) }
        for name in names {
            #expect(literal(name) == name)
            #expect(FieldSyntax.isToken(name.utf8))
            #expect(literal(name.lowercased()) == nil, "\(name)")
            #expect(literal(String(name.dropLast()) + "x") == nil, "\(name)")
        }
        for other in ["", "X", "Hosts", "Content-Typf", "X-Request-Id"] { #expect(literal(other) == nil, "\(other)") }
    }

    @Test func tokenBytesAreExactlyRFC9110Tchar() {
        let tchar = Set("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)
        for byte in UInt8.min...UInt8.max {
            #expect(FieldSyntax.isTokenByte(byte) == tchar.contains(byte), "byte \(byte)")
        }
    }

    @Test func fieldLinesRenderEachLineWithCRLFAndAreReadBackByName() {
        var lines = FieldLines()
        #expect(lines.bytes.isEmpty)
        lines.add("Age", 0)
        lines.add("Cache-Status", "larder; hit; ttl=-3")
        lines.add("X-Request-Id") { $0.append(contentsOf: "ab-1".utf8) }
        #expect(String(decoding: lines.bytes, as: UTF8.self) == "Age: 0\r\nCache-Status: larder; hit; ttl=-3\r\nX-Request-Id: ab-1\r\n")
        #expect(lines.value("cache-status") == "larder; hit; ttl=-3")
        #expect(lines.value("AGE") == "0")
        #expect(lines.value("x-request-id") == "ab-1")
        #expect(lines.value("age2") == nil)
        #expect(lines.value("ag") == nil && lines.value("cache") == nil && lines.value("cache-status:") == nil)
        #expect(FieldLines().value("age") == nil)
        var empty = FieldLines()
        empty.add("Vary", "")
        empty.add("Age", 7)
        #expect(empty.value("vary") == "" && empty.value("age") == "7")
    }

    @Test func decimalTextWritesWhatStringDoes() {
        var values = [0, 1, 9, 10, 99, 100, 999, 1000, 65535, -1, -10, -1234, Int.max, Int.min, Int.max - 1, Int.min + 1]
        var power = 1
        for _ in 0..<18 {
            power *= 10
            values += [power - 1, power, power + 1, -power]
        }
        for value in values {
            var out: [UInt8] = [0x41]
            DecimalText.append(value, to: &out)
            #expect(String(decoding: out, as: UTF8.self) == "A\(value)")
        }
    }

    @Test func commonMethodsAreReadFromTheirBytesAndOthersKeepTheirName() {
        func method(_ text: String) -> HTTPMethod { HTTPMethod(bytes: Array(text.utf8)[...]) }
        #expect(method("GET") == .get)
        #expect(method("HEAD") == .head)
        #expect(method("POST") == .post)
        #expect(method("PUT") == .put)
        #expect(method("GEX") == .other("GEX"))
        #expect(method("get") == .other("get"))  // methods are case-sensitive (RFC 9110 §9.1)
        #expect(method("HEAP") == .other("HEAP"))
    }
}
