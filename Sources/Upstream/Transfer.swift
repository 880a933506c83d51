import CCurl
import Foundation
import Synchronization

/// One exchange: a libcurl easy handle configured from an `UpstreamRequest`, the bytes
/// its callbacks collect, and the continuation its caller awaits.
///
/// After submission only the multi thread touches it, except `cancelled`, which any
/// thread may set.
final class Transfer: @unchecked Sendable {
    let id: Int
    let easy: UnsafeMutableRawPointer
    let maxBodyBytes: Int
    let cancelled = Atomic<Bool>(false)
    var continuation: CheckedContinuation<UpstreamResponse, any Error>?
    var requestTime = Date()

    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    fileprivate var headers: [(name: String, value: String)] = []
    fileprivate var body: [UInt8] = []
    fileprivate var bodyTooLarge = false

    init(id: Int, request: UpstreamRequest, userAgent: String) throws(UpstreamError) {
        guard let easy = curl_easy_init() else { throw .invalidRequest("curl_easy_init failed") }
        self.id = id
        self.easy = easy
        self.maxBodyBytes = request.maxBodyBytes
        errorBuffer.initialize(to: 0)
        do {
            try configure(request, userAgent: userAgent)
        } catch {
            release()
            throw error
        }
    }

    private func configure(_ request: UpstreamRequest, userAgent: String) throws(UpstreamError) {
        func check(_ code: CURLcode, _ what: String) throws(UpstreamError) {
            guard code == CURLE_OK else { throw .invalidRequest("\(what): \(String(cString: curl_easy_strerror(code)))") }
        }
        let scheme = request.url.prefix { $0 != ":" }.lowercased()
        guard scheme == "http" || scheme == "https" else { throw .invalidRequest("only http and https URLs: \(request.url)") }
        try check(larder_easy_setopt_string(easy, CURLOPT_URL, request.url), "URL \(request.url)")
        // Only http and https: a configured URL must never reach file:// or other schemes.
        try check(larder_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https"), "protocols")
        _ = larder_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        _ = larder_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, Self.milliseconds(request.timeout))
        _ = larder_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(request.connectTimeout))
        var fields = request.headers.map { "\($0.name): \($0.value)" }
        if request.forwarding {
            _ = larder_easy_setopt_long(easy, CURLOPT_HTTP_CONTENT_DECODING, 0)
            // curl sends `Accept: */*` unless told otherwise; a forwarded request carries only its own.
            if !request.headers.contains(where: { $0.name.lowercased() == "accept" }) { fields.append("Accept:") }
        } else {
            _ = larder_easy_setopt_string(easy, CURLOPT_USERAGENT, userAgent)
            // Empty string: offer every encoding this libcurl decodes (gzip among them) and decode it.
            _ = larder_easy_setopt_string(easy, CURLOPT_ACCEPT_ENCODING, "")
        }
        _ = larder_easy_setopt_offset(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(request.maxBodyBytes))
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
        case ("GET", nil): break
        case ("HEAD", nil): _ = larder_easy_setopt_long(easy, CURLOPT_NOBODY, 1)
        case ("POST", _?): break  // a body makes curl send POST
        default: try check(larder_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, request.method), "method")
        }
        if let body = request.body {
            _ = larder_easy_setopt_offset(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count))
            body.withUnsafeBytes { bytes in
                _ = larder_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress ?? UnsafeRawPointer(errorBuffer)))
            }
            // curl would add a form Content-Type and Expect: 100-continue of its own; a blank value removes them.
            if !request.headers.contains(where: { $0.name.lowercased() == "content-type" }) { fields.append("Content-Type:") }
            fields.append("Expect:")
        }
        for field in fields { headerList = curl_slist_append(headerList, field) }
        if headerList != nil { _ = larder_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList) }
    }

    private static func milliseconds(_ d: Duration) -> Int {
        let (s, atto) = d.components
        return max(1, Int(s) * 1000 + Int(atto / 1_000_000_000_000_000))
    }

    // MARK: Callbacks (multi thread)

    private func receiveBody(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard body.count + count <= maxBodyBytes else {
            bodyTooLarge = true
            return 0  // curl aborts with CURLE_WRITE_ERROR
        }
        if let data { body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: count)) }
        return count
    }

    private func receiveHeaderLine(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard let data else { return count }
        let line = String(decoding: UnsafeRawBufferPointer(start: data, count: count), as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            headers.removeAll()  // a new response (after 1xx or a redirect) starts over
        } else if let colon = line.firstIndex(of: ":") {
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
            headers.append((name, value))
        }
        return count
    }

    // MARK: Outcome (multi thread)

    /// The response or error for a finished easy handle.
    func outcome(_ code: CURLcode) -> Result<UpstreamResponse, UpstreamError> {
        guard code == CURLE_OK else { return .failure(error(for: code)) }
        var status = 0
        _ = larder_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        return .success(UpstreamResponse(status: status, headers: headers, body: body,
                                         requestTime: requestTime, responseTime: Date()))
    }

    private func error(for code: CURLcode) -> UpstreamError {
        let detail = errorBuffer.pointee != 0 ? String(cString: errorBuffer) : String(cString: curl_easy_strerror(code))
        switch code {
        case CURLE_OPERATION_TIMEDOUT: return .timeout
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: return .cannotResolve(detail)
        case CURLE_COULDNT_CONNECT, CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION: return .cannotConnect(detail)
        case CURLE_GOT_NOTHING, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_PARTIAL_FILE: return .connectionLost(detail)
        case CURLE_FILESIZE_EXCEEDED: return .bodyTooLarge(limit: maxBodyBytes)
        case CURLE_WRITE_ERROR where bodyTooLarge: return .bodyTooLarge(limit: maxBodyBytes)
        case CURLE_URL_MALFORMAT: return .invalidRequest(detail)
        default: return .protocolError(detail)
        }
    }

    /// Frees the easy handle and everything it points at; called once, on the multi thread.
    func release() {
        curl_easy_cleanup(easy)
        curl_slist_free_all(headerList)
        headerList = nil
        errorBuffer.deallocate()
    }
}
