public import HTTPServer

/// Starts an `HTTPServer` on a free loopback port, runs `body` with the port, and always
/// stops the server afterwards.
public func withServer<T>(
    _ configure: (inout HTTPServerConfiguration) -> Void = { _ in },
    handler: @escaping HTTPHandler,
    _ body: (HTTPServer, Int) async throws -> T
) async throws -> T {
    var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
    configuration.eventLoops = 2
    configure(&configuration)
    let server = HTTPServer(configuration: configuration, handler: handler)
    try server.start()
    do {
        let result = try await body(server, server.port!)
        await server.shutdown()
        return result
    } catch {
        await server.shutdown()
        throw error
    }
}

/// Starts a one-loop server, asks it once, and stops it while the answer is still being made:
/// the loop ends at a 100 ms grace period and the handler's Task lives on, held by `gate`.
/// Once the gate opens, `late` runs in that Task (elsewhere: its loop has ended), then it answers.
public func stopWhileAnAnswerIsMade(gate: Gate, late: @escaping @Sendable () -> Void = {}) async throws -> HTTPServer {
    var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
    configuration.eventLoops = 1
    configuration.shutdownGracePeriod = .milliseconds(100)
    let server = HTTPServer(configuration: configuration) { _ in
        .later {
            await gate.wait()
            late()
            return HTTPResponse(status: 200, body: "late")
        }
    }
    try server.start()
    let client = try TestClient(port: server.port!)
    try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
    try await Task.sleep(for: .milliseconds(100))
    await server.shutdown()
    return server
}

/// Polls `condition` until it holds or `timeout` passes: for waiting on progress another
/// thread or task makes on its own (a background refresh, a gate reached).
public func eventually(timeout: Duration = .seconds(10), _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return await condition()
}
