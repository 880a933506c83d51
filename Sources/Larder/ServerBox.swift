import HTTPServer

/// Lets a handler made before the server reach it once it exists.
final class ServerBox: @unchecked Sendable {
    weak var server: HTTPServer?
}
