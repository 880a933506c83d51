import HTTPCore
import Bodies
import HTTPServer
import Testing

/// The few paths a router or a metrics table knows, looked up by a request's path bytes.
@Suite struct PathTableTests {
    @Test func aPathIsFoundByItsExactBytesAmongPathsOfTheSameLength() {
        var table = PathTable<Int>()
        table["/weather"] = 1
        table["/balance"] = 2
        table["/"] = 3
        table["/weather"] = 4  // replaces
        #expect(table.paths == ["/weather", "/balance", "/"])
        let target = "/balance?x=/weather"
        #expect(table.value(at: target[..<target.firstIndex(of: "?")!]) == 2)
        #expect(table.value(at: "/weather") == 4)
        #expect(table.value(at: "/") == 3)
        for absent in ["/Weather", "/weathe", "/weather/", "", "/balancf", "weather"] {
            #expect(table.value(at: Substring(absent)) == nil, "\(absent)")
        }
        table["/balance"] = nil
        #expect(table.value(at: "/balance") == nil && table.paths == ["/weather", "/"])
    }

    @Test func theRouterAnswersEachOfTwoPathsOfTheSameLengthWithItsOwnHandler() {
        var router = Router()
        router.get("/weather") { _ in .now(HTTPResponse(status: 200, body: "w")) }
        router.get("/balance") { _ in .now(HTTPResponse(status: 200, body: "b")) }
        func body(_ target: String) -> String? {
            guard case .now(let response) = router.handle(HTTPRequest(method: .get, target: target)) else { return nil }
            return response.status == 200 ? String(decoding: response.body.inMemory ?? [], as: UTF8.self) : "\(response.status)"
        }
        #expect(body("/weather?lat=1") == "w")
        #expect(body("/balance") == "b")
        #expect(body("/x/../balance") == "b")
        #expect(body("/balancE") == "404")
    }

    @Test func theRouterTellsWhichOfItsSortedPathsAnswered() {
        var router = Router()
        router.get("/weather") { _ in .now(HTTPResponse(status: 200, body: "w")) }
        router.get("/balance") { _ in .now(HTTPResponse(status: 200, body: "b")) }
        router.add(.post, "/admin") { _ in .now(HTTPResponse(status: 204)) }
        #expect(router.paths == ["/admin", "/balance", "/weather"])
        func matched(_ method: HTTPMethod, _ target: String) -> Int? {
            var path: Int?
            _ = router.handle(HTTPRequest(method: method, target: target), matchedPath: &path)
            return path
        }
        #expect(matched(.get, "/weather?lat=1") == 2)
        #expect(matched(.get, "/x/../balance") == 1)
        #expect(matched(.post, "/admin") == 0)
        #expect(matched(.get, "/admin") == 0)  // 405: the path matched, the method did not
        #expect(matched(.get, "/nowhere") == nil)
        #expect(matched(.get, "/../weather") == nil)  // refused before routing
    }
}
