import Testing
@testable import AccessLogging

/// What the server span reads off an answer: the tier a `Cache-Status` names.
@Suite struct SpanReadingTests {
    @Test func namesTheTierThatAnswered() {
        #expect(AccessLog.tier("Larder; hit") == "memory")
        #expect(AccessLog.tier("Larder; hit; detail=disk") == "disk")
        #expect(AccessLog.tier("Larder;hit;detail=redis") == "redis")
        #expect(AccessLog.tier("Larder; fwd=miss; stored") == "upstream")
        #expect(AccessLog.tier("Larder; fwd=stale; detail=disk") == "upstream")
        #expect(AccessLog.tier("Larder") == nil)
        #expect(AccessLog.tier("Larder; hitch; fwdx=miss") == nil)
    }
}
