import Foundation
import HTTPCore
import Testing
import Upstream
@testable import UpstreamPolicy

/// The backoff state machine alone, with times given by the test: when a pause begins, how
/// long it lasts, the one probe, and what ends it.
@Suite struct UpstreamBackoffTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    private func pausedUntil(_ change: UpstreamBackoff.Change?) -> Date? {
        if case .paused(let until, _)? = change { return until }
        return nil
    }

    @Test func fiveNoAnswersInARowBeginAPauseAndAnAnswerBetweenStartsTheCountAgain() {
        let backoff = UpstreamBackoff(rules: .init())
        for _ in 0..<4 { #expect(backoff.record(.noAnswer, probe: false, now: start) == nil) }
        #expect(backoff.record(.answered(status: 500, retryAfter: nil), probe: false, now: start) == nil)
        for _ in 0..<4 { #expect(backoff.record(.noAnswer, probe: false, now: start) == nil) }
        #expect(backoff.admit(now: start) == .send(probe: false))
        let change = backoff.record(.noAnswer, probe: false, now: start)
        #expect(change == .paused(until: start + 5, reason: "5 requests in a row got no answer"))
        #expect(backoff.admit(now: start + 1) == .refused(retryAfter: 4))
    }

    @Test func withoutRetryAfterThePauseDoublesUpToSixtySeconds() throws {
        let backoff = UpstreamBackoff(rules: .init())
        var now = start
        var lengths: [TimeInterval] = []
        var change = backoff.record(.answered(status: 503, retryAfter: nil), probe: false, now: now)
        for _ in 0..<6 {
            let until = try #require(pausedUntil(change))
            lengths.append(until.timeIntervalSince(now))
            #expect(backoff.admit(now: until - 0.5) == .refused(retryAfter: 1))
            now = until
            #expect(backoff.admit(now: now) == .send(probe: true))
            change = backoff.record(.answered(status: 429, retryAfter: nil), probe: true, now: now)
        }
        #expect(lengths == [5, 10, 20, 40, 60, 60])
    }

    @Test func retryAfterIsReadAsSecondsOrAnHTTPDateAndCapped() {
        #expect(UpstreamBackoff.retryAfter("30", now: start) == 30)
        #expect(UpstreamBackoff.retryAfter(" 0 ", now: start) == 0)
        #expect(UpstreamBackoff.retryAfter(HTTPDate.format(start + 120), now: start) == 120)
        #expect(UpstreamBackoff.retryAfter(HTTPDate.format(start - 120), now: start) == 0)
        #expect(UpstreamBackoff.retryAfter("soon", now: start) == nil)
        #expect(UpstreamBackoff.retryAfter("-5", now: start) == nil)

        let backoff = UpstreamBackoff(rules: .init())
        let named = backoff.record(.answered(status: 429, retryAfter: "45"), probe: false, now: start)
        #expect(named == .paused(until: start + 45, reason: "answered 429 with Retry-After"))
        // A named pause does not double the next unnamed one.
        #expect(backoff.admit(now: start + 45) == .send(probe: true))
        let unnamed = backoff.record(.answered(status: 503, retryAfter: "later"), probe: true, now: start + 45)
        #expect(pausedUntil(unnamed) == start + 50)
        #expect(backoff.admit(now: start + 50) == .send(probe: true))
        let huge = backoff.record(.answered(status: 503, retryAfter: "99999999999999999999"), probe: true, now: start + 50)
        #expect(pausedUntil(huge) == start + 50 + 3600)
    }

    @Test func oneProbeAtATimeAndItsAnswerReopensTheUpstream() {
        let backoff = UpstreamBackoff(rules: .init())
        _ = backoff.record(.answered(status: 503, retryAfter: nil), probe: false, now: start)
        #expect(backoff.admit(now: start + 5) == .send(probe: true))
        #expect(backoff.admit(now: start + 5) == .refused(retryAfter: 1))
        #expect(backoff.admit(now: start + 6) == .refused(retryAfter: 1))
        #expect(backoff.pause(now: start + 6)?.reason == "answered 503 without Retry-After")
        #expect(backoff.record(.answered(status: 200, retryAfter: nil), probe: true, now: start + 6) == .reopened)
        #expect(backoff.admit(now: start + 6) == .send(probe: false))
        #expect(backoff.pause(now: start + 6) == nil)
        // Reopened, the next pause is the first length again.
        #expect(pausedUntil(backoff.record(.answered(status: 503, retryAfter: nil), probe: false, now: start + 7)) == start + 12)
    }

    @Test func aProbeThatNeverLeftFreesTheSlotForTheNext() {
        let backoff = UpstreamBackoff(rules: .init())
        _ = backoff.record(.answered(status: 503, retryAfter: nil), probe: false, now: start)
        #expect(backoff.admit(now: start + 5) == .send(probe: true))
        #expect(backoff.record(nil, probe: true, now: start + 5) == nil)
        #expect(backoff.admit(now: start + 5) == .send(probe: true))
    }

    @Test func requestsInFlightWhenThePauseBeganNeitherEndNorDoubleIt() {
        let backoff = UpstreamBackoff(rules: .init())
        _ = backoff.record(.answered(status: 503, retryAfter: nil), probe: false, now: start)
        #expect(backoff.record(.answered(status: 200, retryAfter: nil), probe: false, now: start + 1) == nil)
        #expect(backoff.record(.answered(status: 503, retryAfter: nil), probe: false, now: start + 1) == nil)
        #expect(backoff.pause(now: start + 1)?.until == start + 5)
        // A Retry-After among them may lengthen it, without a second log line.
        #expect(backoff.record(.answered(status: 429, retryAfter: "20"), probe: false, now: start + 1) == nil)
        #expect(backoff.pause(now: start + 1)?.until == start + 21)
    }

    @Test func whereAnswersDoNotPauseOnlyMissingAnswersDo() {
        var rules = UpstreamBackoff.Rules()
        rules.pausesOnAnswers = false
        let backoff = UpstreamBackoff(rules: rules)
        for _ in 0..<10 { #expect(backoff.record(.answered(status: 503, retryAfter: "60"), probe: false, now: start) == nil) }
        for _ in 0..<10 { #expect(backoff.record(.brokenAnswer, probe: false, now: start) == nil) }
        #expect(backoff.admit(now: start) == .send(probe: false))
        // A broken reply between missing ones starts the count again: the origin was reached.
        for _ in 0..<4 { _ = backoff.record(.noAnswer, probe: false, now: start) }
        _ = backoff.record(.brokenAnswer, probe: false, now: start)
        for _ in 0..<4 { _ = backoff.record(.noAnswer, probe: false, now: start) }
        #expect(backoff.admit(now: start) == .send(probe: false))
        _ = backoff.record(.noAnswer, probe: false, now: start)
        #expect(backoff.admit(now: start) == .refused(retryAfter: 5))
        // And a probe that gets a broken reply reopens it.
        #expect(backoff.admit(now: start + 5) == .send(probe: true))
        #expect(backoff.record(.brokenAnswer, probe: true, now: start + 5) == .reopened)
    }

    @Test func whereAnswersPauseBrokenRepliesCountAsMissingOnes() {
        let backoff = UpstreamBackoff(rules: .init())
        for _ in 0..<4 { #expect(backoff.record(.brokenAnswer, probe: false, now: start) == nil) }
        #expect(backoff.record(.noAnswer, probe: false, now: start) == .paused(until: start + 5, reason: "5 requests in a row got no answer"))
    }

    @Test func aFailedExchangeIsBrokenWhenTheUpstreamWasReached() {
        let broken: [UpstreamError] = [.connectionLost("Empty reply from server"), .protocolError("bad status line"), .bodyTooLarge(limit: 1)]
        let missing: [UpstreamError] = [.timeout, .cannotConnect("refused"), .cannotResolve("nowhere")]
        #expect(broken.map { UpstreamBackoff.Outcome(failure: $0) } == Array(repeating: .brokenAnswer, count: 3))
        #expect(missing.map { UpstreamBackoff.Outcome(failure: $0) } == Array(repeating: .noAnswer, count: 3))
    }
}
