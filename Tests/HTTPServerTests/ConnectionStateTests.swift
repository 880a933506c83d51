import Testing
@testable import HTTPServer
import Bodies

/// A connection's rules with plain numbers: times in nanoseconds, no sockets, no sleeps.
@Suite struct ConnectionStateTests {
    typealias State = Connection.State
    static let second: UInt64 = 1_000_000_000

    /// Header 10 s, body gap 10 s, whole body 60 s, idle 60 s, write stall 30 s, 1 MiB, 64 deep.
    private func state(at now: UInt64 = 0) -> State {
        State(limits: State.Limits(headerRead: 10 * Self.second, bodyGap: 10 * Self.second, bodyTotal: 60 * Self.second,
                                   idle: 60 * Self.second, writeStall: 30 * Self.second, maxOutputBytes: 1 << 20,
                                   maxPipelinedRequests: 64), now: now)
    }

    @Test func theHeaderTimerRunsFromTheFirstByteBlankLinesIncluded() {
        var s = state()
        s.bytesRead(at: 1 * Self.second)  // "\r\n"
        s.parserWaiting(readingHead: true, readingBody: false, at: 1 * Self.second)
        // More blank lines keep arriving: the timer does not restart.
        for t in stride(from: 2, through: 11, by: 3) {
            s.bytesRead(at: UInt64(t) * Self.second)
            s.parserWaiting(readingHead: true, readingBody: false, at: UInt64(t) * Self.second)
        }
        #expect(s.tick(at: 10 * Self.second, State.Load(requestInProgress: true)) == .none)
        #expect(s.tick(at: 11 * Self.second + 1, State.Load(requestInProgress: true)) == .timeout("The request header was not received in time."))
    }

    @Test func aParsedRequestStopsTheHeaderTimer() {
        var s = state()
        s.parserWaiting(readingHead: true, readingBody: false, at: 0)
        s.requestParsed()
        #expect(s.tick(at: 30 * Self.second, State.Load(responsesOwed: 1)) == .none)
    }

    @Test func aBodyMustKeepArriving() {
        var s = state()
        s.parserWaiting(readingHead: false, readingBody: true, at: 0)
        s.bytesRead(at: 5 * Self.second)
        #expect(s.tick(at: 14 * Self.second, State.Load(requestInProgress: true)) == .none)
        #expect(s.tick(at: 16 * Self.second, State.Load(requestInProgress: true)) == .timeout("The request body did not keep arriving."))
    }

    @Test func aBodyDrippingSteadilyStillEndsAtTheWholeBodyLimit() {
        var s = state()
        s.parserWaiting(readingHead: false, readingBody: true, at: 0)
        var now: UInt64 = 0
        while now < 60 * Self.second {
            now += 3 * Self.second
            s.bytesRead(at: now)
            s.parserWaiting(readingHead: false, readingBody: true, at: now)
            if now <= 60 * Self.second { #expect(s.tick(at: now, State.Load(requestInProgress: true)) == .none) }
        }
        #expect(s.tick(at: 61 * Self.second, State.Load(requestInProgress: true)) != .none)
    }

    @Test func aBodyIsNotTimedWhileTheServerIsNotReading() {
        var s = state()
        s.parserWaiting(readingHead: false, readingBody: true, at: 0)
        let full = State.Load(pendingOutput: 1 << 20, requestInProgress: true)
        s.bytesWritten(at: 20 * Self.second)
        #expect(s.tick(at: 20 * Self.second, full) == .none)
    }

    @Test func anIdleConnectionClosesAfterTheIdleTimeoutButNotWhileAnAnswerIsOwed() {
        var s = state()
        s.bytesWritten(at: 5 * Self.second)
        #expect(s.tick(at: 64 * Self.second, State.Load()) == .none)
        #expect(s.tick(at: 66 * Self.second, State.Load(responsesOwed: 1)) == .none)
        #expect(s.tick(at: 66 * Self.second, State.Load()) == .close)
    }

    @Test func aClientThatStopsReadingIsClosedAfterTheWriteStall() {
        var s = state()
        s.bytesWritten(at: 1 * Self.second)
        let waiting = State.Load(pendingOutput: 100)
        #expect(s.tick(at: 31 * Self.second, waiting) == .none)
        #expect(s.tick(at: 32 * Self.second, waiting) == .close)
    }

    @Test func backPressureStopsParsing() {
        var s = state()
        #expect(!s.isBackPressured(State.Load(responsesOwed: 63, pendingOutput: (1 << 20) - 1)))
        #expect(s.isBackPressured(State.Load(responsesOwed: 64)))
        #expect(s.isBackPressured(State.Load(pendingOutput: 1 << 20)))
        #expect(s.isBackPressured(State.Load(renderBacklog: true)))
        // The server's output across connections is at its bound, and this one has some waiting.
        #expect(s.isBackPressured(State.Load(pendingOutput: 10, budgetSpent: true)))
        #expect(!s.wantsRead(State.Load(pendingOutput: 10, budgetSpent: true)))
        s.asyncStarted()
        #expect(s.isBackPressured(State.Load()))
        #expect(!s.wantsRead(State.Load()))
        s.asyncFinished()
        #expect(!s.isBackPressured(State.Load()))
        #expect(s.wantsRead(State.Load()))
    }

    @Test func aLastResponseLingersOnceWritten() {
        var s = state()
        s.requestAdmitted(keepAlive: false)
        #expect(s.phase == .closing)
        #expect(!s.wantsRead(State.Load()))
        #expect(s.settle(State.Load(responsesOwed: 1), draining: false) == .keep)
        #expect(s.settle(State.Load(pendingOutput: 10), draining: false) == .keep)
        #expect(s.settle(State.Load(), draining: false) == .linger)
        s.lingerStarted(at: 100 * Self.second)
        #expect(s.wantsRead(State.Load()))
        #expect(s.tick(at: 101 * Self.second, State.Load()) == .none)
        #expect(s.tick(at: 102 * Self.second, State.Load()) == .close)
    }

    @Test func aPeerThatClosedIsClosedOnceAnswered() {
        var s = state()
        s.peerClosed()
        #expect(!s.wantsRead(State.Load()))
        #expect(s.settle(State.Load(responsesOwed: 1), draining: false) == .keep)
        #expect(s.settle(State.Load(), draining: false) == .close)
    }

    @Test func aStopLingersIdleConnectionsAndFinishesTheRest() {
        var s = state()
        #expect(s.drain(State.Load()) == .linger)
        #expect(s.drain(State.Load(responsesOwed: 2)) == .closeAfterOwed)
        #expect(s.drain(State.Load(responsesOwed: 1, requestInProgress: true)) == .finishRequest)
        #expect(s.settle(State.Load(), draining: true) == .linger)
        s.closeAfterOwed()
        #expect(s.phase == .closing)
    }

    @Test func anErrorEndsReadingAndStopsTheTimers() {
        var s = state()
        s.parserWaiting(readingHead: true, readingBody: false, at: 0)
        s.failed()
        #expect(s.phase == .closing)
        #expect(s.tick(at: 20 * Self.second, State.Load(responsesOwed: 1)) == .none)
    }

    /// Output waiting for a body still arriving from an upstream: the socket is not watched
    /// for room, the client is not blamed for the wait, and once more arrives the write-stall
    /// clock starts again from then.
    @Test func waitingForAnUpstreamsBodyIsNoWriteStall() {
        var s = state()
        s.bytesWritten(at: 0)
        let waiting = State.Load(responsesOwed: 1, pendingOutput: 1 << 20, awaitingBody: true)
        let sending = State.Load(responsesOwed: 1, pendingOutput: 1 << 20)
        #expect(!s.wantsWrite(waiting) && s.wantsWrite(sending) && !s.wantsWrite(State.Load()))
        #expect(s.tick(at: 45 * Self.second, waiting) == .none)
        #expect(s.tick(at: 45 * Self.second, sending) == .close)
        s.bodyArrived(at: 45 * Self.second)
        #expect(s.tick(at: 70 * Self.second, sending) == .none)
        #expect(s.tick(at: 76 * Self.second, sending) == .close)
    }

    /// A dispatched request's body still streaming in is read whatever else waits (its answer
    /// may wait for it), even once the connection is closing, and only its gaps are timed.
    @Test func aStreamingBodyIsReadWhileItsAnswerIsAwaited() {
        var s = state()
        s.asyncStarted()
        let streaming = State.Load(responsesOwed: 1, pendingOutput: 1 << 20, requestInProgress: true, streamingBody: true, bodyInFile: true)
        #expect(s.isBackPressured(State.Load(responsesOwed: 1, requestInProgress: true)))
        #expect(!s.isBackPressured(streaming) && s.wantsRead(streaming))
        s.requestAdmitted(keepAlive: false)
        #expect(s.wantsRead(streaming) && !s.wantsRead(State.Load(responsesOwed: 1)))
        // Arriving steadily, it is not cut off at the whole-body limit; a pause still ends it.
        let arriving = State.Load(responsesOwed: 1, requestInProgress: true, streamingBody: true, bodyInFile: true)
        var now: UInt64 = 0
        while now < 120 * Self.second {
            now += 3 * Self.second
            s.bytesRead(at: now)
            s.parserWaiting(readingHead: false, readingBody: true, at: now)
            #expect(s.tick(at: now, arriving) == .none)
        }
        #expect(s.tick(at: now + 11 * Self.second, arriving) != .none)
    }

    /// A chunked body read whole before dispatch is timed by its gaps alone once it is in a
    /// file (past what is held); while held in memory, the whole-body limit applies too.
    @Test func aChunkedBodyInAFileIsTimedByItsGapsAlone() {
        for inFile in [true, false] {
            var s = state()
            let arriving = State.Load(requestInProgress: true, bodyInFile: inFile)
            var now: UInt64 = 0
            var cutAt: UInt64?
            while now < 120 * Self.second, cutAt == nil {
                now += 3 * Self.second
                s.bytesRead(at: now)
                s.parserWaiting(readingHead: false, readingBody: true, at: now)
                if s.tick(at: now, arriving) != .none { cutAt = now }
            }
            #expect(inFile ? cutAt == nil : cutAt.map { $0 > 60 * Self.second && $0 < 70 * Self.second } == true)
        }
    }
}
