import HTTPCore
import Bodies

/// Renders a response into the connection's output buffer so head and body leave in one
/// write; a large body is shared with the response rather than copied (`OutputBuffer`).
enum ResponseSerializer {
    /// How the request shaped its response: HEAD drops the body, keep-alive decides `Connection`.
    struct Context {
        var isHead: Bool
        var keepAlive: Bool
        var version: HTTPVersion
    }

    static func write(_ response: HTTPResponse, context: Context, date: [UInt8], into output: inout OutputBuffer) {
        if !response.interim.isEmpty, context.version == .http11 { writeInterim(response.interim, into: &output.bytes) }
        let sendsBody = response.allowsBody && !context.isHead
        // A file region is always sent from its file; bytes are copied in beside the head when small.
        var copied: [UInt8]?
        if sendsBody, case .bytes(let bytes) = response.body, bytes.count < OutputBuffer.sharedBodyMinimum { copied = bytes }
        write(response, context: context, date: date, copying: copied, into: &output.bytes)
        if sendsBody, copied == nil {
            if case .stream(let region) = response.body, region.runsToTheEnd {
                output.shareToTheEnd(region, chunked: context.version == .http11, whenSent: response.bodySent)
            } else {
                output.share(response.body, 0..<response.body.count, whenSent: response.bodySent)
            }
        } else if let bodySent = response.bodySent {
            // Nothing, or a small body in the same write as the head.
            bodySent(copied?.count ?? 0)
        }
    }

    private static func write(_ response: HTTPResponse, context: Context, date: [UInt8], copying body: [UInt8]?, into out: inout ByteBuffer) {
        out.reserve(128 + (body?.count ?? 0) + response.headers.byteCount)
        if let line = Self.statusLine(response.status) {
            out.append(line)
        } else {
            out.append(Array("HTTP/1.1 \(response.status) \(ReasonPhrase.of(response.status))\r\n".utf8))
        }
        out.append(response.headers.lines.bytes)
        if let shared = response.headers.shared { out.append(shared.bytes) }
        if !response.headers.hasDate { out.append(date) }
        if response.body.isOpenEnded {
            // Its length is known only at its end: chunked to HTTP/1.1; to HTTP/1.0 it ends
            // with the connection (`Connection` closes after it). A HEAD answer states neither.
            if response.allowsBody, !context.isHead, context.version == .http11 { out.append("Transfer-Encoding: chunked\r\n") }
        } else if response.allowsBody {
            out.append("Content-Length: ")
            out.append(decimal: context.isHead && response.body.isEmpty ? response.headContentLength ?? 0 : response.body.count)
            out.append("\r\n")
        }
        if !context.keepAlive {
            out.append("Connection: close\r\n")
        } else if context.version == .http10 {
            out.append("Connection: keep-alive\r\n")
        }
        out.append("\r\n")
        if let body { out.append(body) }
    }

    /// Each informational response, status line and fields, before the final one.
    private static func writeInterim(_ responses: [InterimResponse], into out: inout ByteBuffer) {
        for interim in responses where InterimResponse.isRelayed(interim.status) {
            out.append(Array("HTTP/1.1 \(interim.status) \(ReasonPhrase.of(interim.status))\r\n".utf8))
            for field in interim.headers {
                var name = field.name
                name.withUTF8 { out.append($0) }
                out.append(": ")
                FieldText.withOctets(field.value) { out.append($0) }
                out.append("\r\n")
            }
            out.append("\r\n")
        }
    }

    /// Status lines of the statuses with a reason phrase, rendered once and indexed by
    /// status − 100 (no hashing per response).
    private static let statusLines: [[UInt8]?] = (100..<600).map { status in
        ReasonPhrase.of(status).isEmpty ? nil : Array("HTTP/1.1 \(status) \(ReasonPhrase.of(status))\r\n".utf8)
    }

    private static func statusLine(_ status: Int) -> [UInt8]? {
        (100..<600).contains(status) ? statusLines[status - 100] : nil
    }
}
