import CCurl
import Foundation
import HTTPCore
import Bodies

/// What a finished transfer amounts to: its answer, or the `UpstreamError` that says why not.
extension Transfer {
    /// The response or error for a finished easy handle.
    func outcome(_ code: CURLcode) -> Result<UpstreamResponse, UpstreamError> {
        if let violation = head.violation { return .failure(.protocolError("malformed response head: \(violation)")) }
        guard code == CURLE_OK else { return .failure(error(for: code)) }
        var status = 0
        _ = larder_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        guard ReceivedFields.isFinalStatus(status) else { return .failure(.protocolError("status \(status) is not a final HTTP status")) }
        let content: Body = spool.map { .file(FileRegion(file: $0, offset: $0.headRoom, count: spooled)) } ?? .bytes(body)
        return .success(UpstreamResponse(status: status, headers: head.fields, body: content,
                                         requestTime: requestTime, responseTime: Date(), interim: head.interim))
    }

    private func error(for code: CURLcode) -> UpstreamError {
        let detail = errorBuffer.pointee != 0 ? String(cString: errorBuffer) : String(cString: curl_easy_strerror(code))
        switch code {
        // Waiting on the client, or its body ended short: the client's doing, not the upstream's.
        case _ where uploadFailure != nil: return .requestBodyIncomplete(uploadFailure!, stalled: false)
        case CURLE_OPERATION_TIMEDOUT where uploadWaiting: return .requestBodyIncomplete("the client's body stopped arriving", stalled: true)
        case CURLE_OPERATION_TIMEDOUT: return .timeout
        case CURLE_ABORTED_BY_CALLBACK where headTimedOut: return .timeout
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: return .cannotResolve(detail)
        case CURLE_COULDNT_CONNECT, CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION: return .cannotConnect(detail)
        case CURLE_GOT_NOTHING, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_PARTIAL_FILE: return .connectionLost(detail)
        case CURLE_FILESIZE_EXCEEDED: return .bodyTooLarge(limit: largestBody)
        case CURLE_WRITE_ERROR where bodyTooLarge: return .bodyTooLarge(limit: largestBody)
        case _ where spoolFailure != nil: return .spoolFailed(spoolFailure!)
        case CURLE_URL_MALFORMAT: return .invalidRequest(detail)
        default: return .protocolError(detail)
        }
    }
}
