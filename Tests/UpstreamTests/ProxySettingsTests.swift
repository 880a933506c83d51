import HTTPCore
import Bodies
import HTTPServer
import Testing
import TestSupport
@testable import Upstream

@Suite(.timeLimit(.minutes(1))) struct ProxySettingsTests {
    @Test func theVariablesAreReadAsLibcurlReadsThem() {
        func settings(_ variables: [String: String]) -> ProxySettings { ProxySettings { variables[$0] } }
        // Upper-case HTTP_PROXY is never read (CGI sets it from a request's Proxy field).
        let upper = settings(["HTTP_PROXY": "http://ignored:1", "HTTPS_PROXY": "http://secure:2", "ALL_PROXY": "http://all:3", "NO_PROXY": "internal"])
        #expect(upper == ProxySettings(http: "http://all:3", https: "http://secure:2", noProxy: "internal"))
        // Lower case first; an empty variable counts as unset.
        let lower = settings(["http_proxy": "http://a:1", "https_proxy": "http://b:2", "HTTPS_PROXY": "http://c:3",
                              "all_proxy": "", "ALL_PROXY": "http://d:4", "no_proxy": "", "NO_PROXY": "example.org"])
        #expect(lower == ProxySettings(http: "http://a:1", https: "http://b:2", noProxy: "example.org"))
        #expect(settings(["all_proxy": "http://e:5"]) == ProxySettings(http: "http://e:5", https: "http://e:5"))
        #expect(settings([:]) == ProxySettings())
    }

    /// The proxy is a second server answering `/ok` itself: the body says which one answered.
    @Test func aTransferGoesThroughTheProxyUnlessItsHostIsExempt() async throws {
        var proxy = Router()
        proxy.get("/ok") { request in .now(HTTPResponse(status: 200, body: "proxied to \(request.headers["host"] ?? "")")) }
        try await withServer(handler: upstreamRouter()) { _, origin in
            try await withServer(handler: proxy.handler) { _, proxyPort in
                func body(_ proxies: ProxySettings) async -> String {
                    let client = UpstreamClient(configuration: .init(proxies: proxies))
                    let response = try? await client.fetch(UpstreamRequest(url: "http://127.0.0.1:\(origin)/ok"))
                    await client.shutdown()
                    return response.map { String(decoding: $0.body.inMemory ?? [], as: UTF8.self) } ?? "no answer"
                }
                let through = ProxySettings(http: "http://127.0.0.1:\(proxyPort)")
                #expect(await body(through) == "proxied to 127.0.0.1:\(origin)")
                #expect(await body(ProxySettings(http: through.http, noProxy: "127.0.0.1")) == "hello")
                // Only http URLs take the http proxy.
                #expect(await body(ProxySettings(https: through.http)) == "hello")
                #expect(await body(ProxySettings()) == "hello")
            }
        }
    }
}
