import HTTPCore
import Bodies

/// What the message framing rules (RFC 9112 §6) need from a request's header section. The
/// parser notes each kept field line as it parses it, so no second pass over the fields
/// compares every name again; trailer fields are never noted.
struct RequestFraming {
    var hosts = 0
    /// A `Host` whose value is no `uri-host [ ":" port ]` (RFC 9112 §3.2: 400).
    var invalidHost = false
    var contentLengths: [String] = []
    var transferEncoding = false
    var codings: [String] = []
    var expectContinue = false
    var connectionClose = false
    var connectionKeepAlive = false

    /// Most names differ from the five that matter in length alone.
    mutating func note(_ name: UnsafeBufferPointer<UInt8>, _ value: String) {
        switch name.count {
        case 4 where Self.nameIs(name, "host"):
            hosts += 1
            invalidHost = invalidHost || !Self.isHost(value)
        case 6 where Self.nameIs(name, "expect"):
            expectContinue = expectContinue || Self.tokens(value).contains("100-continue")
        case 10 where Self.nameIs(name, "connection"):
            for token in Self.tokens(value) {
                if token == "close" { connectionClose = true } else if token == "keep-alive" { connectionKeepAlive = true }
            }
        case 14 where Self.nameIs(name, "content-length"): contentLengths.append(value)
        case 17 where Self.nameIs(name, "transfer-encoding"):
            transferEncoding = true
            codings += Self.tokens(value)
        default: break
        }
    }

    /// RFC 3986 §3.2.2–3.2.3: a reg-name (unreserved, sub-delims, `%`), an IPv4 address or
    /// an IP-literal in brackets, then an optional `:port`; empty is allowed (§3.2 of RFC
    /// 9112). No `/`, `?`, `#`, `@`, space or control: `Host: evil.com/../x` is refused.
    static func isHost(_ value: String) -> Bool {
        value.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
            case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "%"), UInt8(ascii: ":"),
                 UInt8(ascii: "["), UInt8(ascii: "]"), UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"),
                 UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
                 UInt8(ascii: "="): true
            default: false
            }
        }
    }

    /// Whether a field name's bytes are `name`, in any case.
    static func nameIs(_ bytes: UnsafeBufferPointer<UInt8>, _ name: StaticString) -> Bool {
        name.withUTF8Buffer { HTTPHeaders.namesEqual(bytes, $0) }
    }

    /// The lower-cased members of a comma-separated field value.
    static func tokens(_ value: String) -> [String] {
        value.listMembers().map { $0.lowercased() }
    }
}

// MARK: The body the fields call for (RFC 9112 §6.1–6.3)

extension RequestFraming {
    enum Body { case length(Int), chunked }

    /// Whether the fields say a body follows (a length or a transfer coding).
    var announcesBody: Bool { transferEncoding || !contentLengths.isEmpty }

    /// How the body is framed, or why the request is refused (413 past `maxBody`).
    func body(version: HTTPVersion, maxBody: Int) -> Result<Body, HTTPParseError> {
        if !contentLengths.isEmpty, transferEncoding {
            return .failure(.bad("Content-Length and Transfer-Encoding together are not allowed."))
        }
        if transferEncoding {
            if version == .http10 { return .failure(.bad("Transfer-Encoding is not allowed in HTTP/1.0.")) }
            guard let final = codings.last else { return .failure(.bad("Transfer-Encoding is empty.")) }
            if final != "chunked" {
                return .failure(Self.knownCodings.contains(final) ? .bad("The final transfer coding must be chunked.") : .unknownTransferCoding)
            }
            // chunked must be applied exactly once (RFC 9112 §6.1); any coding under it we cannot undo.
            if codings.dropLast().contains("chunked") { return .failure(.bad("chunked is applied more than once.")) }
            if codings.count > 1 { return .failure(.unknownTransferCoding) }
            return .success(.chunked)
        }
        guard let raw = contentLengths.first else { return .success(.length(0)) }
        guard contentLengths.count == 1 else { return .failure(.bad("More than one Content-Length header.")) }
        guard !raw.isEmpty, raw.utf8.count <= 18, raw.utf8.allSatisfy(FieldSyntax.isDigit), let length = Int(raw) else {
            return .failure(raw.utf8.allSatisfy(FieldSyntax.isDigit) && !raw.isEmpty ? .bodyTooLarge
                : .bad("Content-Length is not a non-negative integer."))
        }
        return length > maxBody ? .failure(.bodyTooLarge) : .success(.length(length))
    }

    private static let knownCodings: Set<String> = ["chunked", "gzip", "x-gzip", "deflate", "compress", "x-compress", "identity"]
}

// MARK: Chunked framing (RFC 9112 §7.1)

extension RequestParser {
    /// The most chunk-extension bytes one request may carry in all (RFC 9112 §7.1.1 asks for
    /// a limit): without one, a byte of content per chunk with a long extension made the
    /// body limit take a thousand times its size from the wire. Node.js took 16 KiB too.
    static let maxChunkExtensionBytes = 16 << 10

    /// `1a;ext=1` → 26: hex digits, then nothing or `;` extensions (RFC 9112 §7.1.1, with
    /// the optional whitespace before `;` that its BWS allows), then the line ends. Anything
    /// else (`5 garbage`, `0x5`, `+5`) is nil. At most 15 hex digits, so it never overflows.
    /// `extensions`: the bytes after the digits.
    static func parseChunkSize(_ line: ArraySlice<UInt8>) -> (size: Int, extensions: Int)? {
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
        return (size, line.count - digits)
    }
}
