import CCurl
import HTTPCore
import Bodies

/// A request body libcurl reads as it sends: from its file, or from a stream as far as the
/// client has sent it (multi thread).
extension Transfer {
    /// Fills libcurl's buffer with the next bytes of the request body: from its file, or from
    /// a stream as far as the client has sent it (then it pauses until `wake`).
    func sendBody(_ data: UnsafeMutablePointer<CChar>?, _ room: Int) -> Int {
        guard let upload, let data, room > 0, uploaded < upload.count else { return 0 }
        let file: BodyFile, start: Int
        var available = upload.count - uploaded
        switch upload {
        case .bytes: return 0
        case .file(let region): (file, start) = (region.file, region.offset)
        case .stream(let region):
            (file, start) = (region.stream.file, region.offset)
            // Caught up with the client: wait for more (when the stream moved on meanwhile,
            // `wait` says so and it is looked at again).
            while case .written(let written) = region.stream.progress, written - start <= uploaded {
                guard let wake else {
                    uploadFailure = "no driver to resume the transfer once more arrives"
                    return larder_read_abort()
                }
                if region.stream.wait(beyond: start + uploaded, wake) {
                    uploadWaiting = true
                    return larder_read_pause()
                }
            }
            if region.stream.progress == .failed {
                uploadFailure = "the client's body ended short"
                return larder_read_abort()
            }
            available = min(available, region.stream.written - start - uploaded)
        }
        guard available > 0 else { return 0 }
        let n = file.read(into: UnsafeMutableRawBufferPointer(start: data, count: min(room, available)), at: start + uploaded)
        guard n > 0 else {
            // Larder's own file, not the client's doing.
            spoolFailure = "the request body's file could not be read"
            return larder_read_abort()
        }
        uploaded += n
        return n
    }

    /// Moves back to `offset` of the request body, for libcurl to send it again (on a new
    /// connection after a reused one closed).
    func rewindBody(to offset: Int, _ origin: Int32) -> Int32 {
        guard origin == SEEK_SET, let upload, offset >= 0, offset <= upload.count else { return Int32(CURL_SEEKFUNC_CANTSEEK) }
        uploaded = offset
        return Int32(CURL_SEEKFUNC_OK)
    }
}
