import CCurl
#if canImport(Glibc)
import Glibc
#endif

/// The sockets of the connections one multi handle keeps between transfers, so one is looked
/// at before a request goes on it again. Bytes an origin sent past an answer's framing, or
/// onto an idle connection, would be read as the next request's answer (and stored), and
/// libcurl's own check before reuse takes a readable connection as alive: such a connection
/// is ended, and the request goes again, once, on a new one. libcurl names a reused
/// connection only by its ports before the request goes on it, hence the keys. Used on the
/// driver's one thread only.
final class KeptConnections {
    /// Socket by `key`, and the key of each socket, so a closed one leaves both.
    private var sockets: [Int: Int32] = [:]
    private var keys: [Int32: Int] = [:]

    /// Two open connections share both ports only to different addresses; then the later is checked.
    private static func key(localPort: Int, primaryPort: Int) -> Int { localPort << 16 | primaryPort }

    /// Hooks a transfer about to go on the multi handle: its connection is checked once chosen,
    /// and the connections it opens report their closing here.
    func watch(_ transfer: Transfer) {
        transfer.keptConnections = self
        _ = larder_easy_setopt_close_socket(transfer.easy, { context, socket in
            Unmanaged<KeptConnections>.fromOpaque(context!).takeUnretainedValue().close(socket)
        }, Unmanaged.passUnretained(self).toOpaque())
        _ = larder_easy_setopt_prereq(transfer.easy, { context, _, _, primaryPort, localPort in
            let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
            return transfer.keptConnections?.refuses(transfer, localPort: Int(localPort), primaryPort: Int(primaryPort)) == true ? 1 : 0
        }, Unmanaged.passUnretained(transfer).toOpaque())
    }

    /// Whether the kept connection chosen for `transfer` holds bytes nobody asked for; it is
    /// then shut down (libcurl closes it when the transfer aborts). A new connection has no key
    /// yet, so costs nothing; a reused one, one non-blocking peek.
    private func refuses(_ transfer: Transfer, localPort: Int, primaryPort: Int) -> Bool {
        guard let socket = sockets[Self.key(localPort: localPort, primaryPort: primaryPort)],
              larder_end_if_unasked(socket) != 0 else { return false }
        transfer.refusedConnection = true
        return true
    }

    /// Puts a transfer whose connection was refused back on the multi handle, on a new
    /// connection; false when it was not refused, or already went again (its failure stands).
    func sendsAgain(_ transfer: Transfer, on multi: UnsafeMutableRawPointer) -> Bool {
        guard transfer.refusedConnection, !transfer.sentAgain else { return false }
        transfer.refusedConnection = false
        transfer.sentAgain = true
        _ = larder_easy_setopt_long(transfer.easy, CURLOPT_FRESH_CONNECT, 1)
        curl_multi_remove_handle(multi, transfer.easy)
        curl_multi_add_handle(multi, transfer.easy)
        return true
    }

    /// Notes the HTTP/1 connection a finished transfer opened, if libcurl kept it.
    func keep(_ easy: UnsafeMutableRawPointer) {
        var connects = 0
        var version = 0
        _ = larder_easy_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &connects)
        guard connects > 0 else { return }
        // HTTP/2 frames every byte and multiplexes: its connection is never idle nor out of step.
        _ = larder_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version)
        guard version == CURL_HTTP_VERSION_1_1 || version == CURL_HTTP_VERSION_1_0 else { return }
        let socket = larder_easy_kept_socket(easy)
        guard socket >= 0 else { return }
        var localPort = 0
        var primaryPort = 0
        _ = larder_easy_getinfo_long(easy, CURLINFO_LOCAL_PORT, &localPort)
        _ = larder_easy_getinfo_long(easy, CURLINFO_PRIMARY_PORT, &primaryPort)
        // libcurl names the last connection this handle left open, which is an earlier
        // transfer's when this one's was closed: it must be this one's.
        guard Int(larder_local_port(socket)) == localPort else { return }
        let key = Self.key(localPort: localPort, primaryPort: primaryPort)
        if let earlier = sockets[key] { keys[earlier] = nil }
        sockets[key] = socket
        keys[socket] = key
    }

    /// Closes a socket of a connection libcurl ends (it leaves that to this callback).
    private func close(_ socket: Int32) -> Int32 {
        if let key = keys.removeValue(forKey: socket), sockets[key] == socket { sockets[key] = nil }
        return Glibc.close(socket)
    }
}
