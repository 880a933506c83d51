import HTTPCore

/// A request line (RFC 9112 §3), parsed on its raw bytes: its method, target in origin-form
/// (or `*`), version, and the authority of a target sent in absolute-form, which then
/// stands for the request's `Host` (RFC 9112 §3.2.2).
struct RequestLine {
    let method: HTTPMethod
    let target: String
    let version: HTTPVersion
    let authority: String?

    /// On the line's raw bytes, as every request runs it: no slice bookkeeping, no closure
    /// per byte; the only String made is the target's.
    static func parse(_ line: UnsafeBufferPointer<UInt8>) -> Result<RequestLine, HTTPParseError> {
        // method SP request-target SP HTTP-version, with exactly one space between (RFC 9112 §3).
        let n = line.count
        var firstSpace = 0
        while firstSpace < n, line[firstSpace] != 0x20 { firstSpace += 1 }
        // The target's bytes are checked in the same pass; a fault is told after the shape's.
        // A `#` starts a fragment, which no request target has (RFC 9112 §3.2).
        var secondSpace = firstSpace + 1, targetIsVisible = true
        while secondSpace < n, line[secondSpace] != 0x20 {
            if line[secondSpace] < 0x20 || line[secondSpace] >= 0x7F || line[secondSpace] == 0x23 { targetIsVisible = false }
            secondSpace += 1
        }
        var thirdSpace = secondSpace + 1
        while thirdSpace < n, line[thirdSpace] != 0x20 { thirdSpace += 1 }
        // A missing space leaves an index past the end; a third space leaves one before it.
        guard secondSpace < n, thirdSpace == n, firstSpace > 0, secondSpace > firstSpace + 1 else {
            return .failure(.bad("The request line is not `method SP target SP version`."))
        }
        for i in 0..<firstSpace where !FieldSyntax.isTokenByte(line[i]) { return .failure(.bad("The method is not a token.")) }
        guard targetIsVisible else { return .failure(.bad("The request target contains a byte that is not allowed.")) }
        let o = secondSpace + 1
        guard n - o == 8, line[o] == 0x48, line[o + 1] == 0x54, line[o + 2] == 0x54, line[o + 3] == 0x50, line[o + 4] == 0x2F,  // "HTTP/"
              FieldSyntax.isDigit(line[o + 5]), line[o + 6] == 0x2E, FieldSyntax.isDigit(line[o + 7]) else {
            return .failure(.bad("The HTTP version is malformed."))
        }
        let version: HTTPVersion
        switch (line[o + 5], line[o + 7]) {
        case (0x31, 0x31): version = .http11
        case (0x31, 0x30): version = .http10
        default: return .failure(.versionNotSupported)
        }
        let method = HTTPMethod(bytes: line[..<firstSpace])
        // A tunnel is no resource: Larder neither serves nor forwards CONNECT.
        if method == .connect { return .failure(.connectNotImplemented) }
        let targetBytes = UnsafeBufferPointer(rebasing: line[(firstSpace + 1)..<secondSpace])
        let rawTarget = String(decoding: targetBytes, as: UTF8.self)
        if targetBytes[0] == 0x2F || (targetBytes.count == 1 && targetBytes[0] == 0x2A && method == .options) {
            return .success(RequestLine(method: method, target: rawTarget, version: version, authority: nil))
        }
        guard let absolute = WebScheme.originForm(ofAbsolute: rawTarget) else {
            return .failure(.bad("The request target is not in origin-form or absolute-form."))
        }
        return .success(RequestLine(method: method, target: absolute.target, version: version, authority: absolute.authority))
    }

}
