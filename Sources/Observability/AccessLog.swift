import Caching
import HTTPCore
import HTTPServer
import Logging
import Synchronization

/// One access log line and the request series per request, wrapped around every handler so
/// async answers are logged when they leave. The line has the client address, method,
/// target, status, cache status, bytes, duration and request id; it is `info`, `warning`
/// for a stored answer standing in for a failed upstream, `error` for a 5xx, so
/// `--log-level warning` still shows an outage.
///
/// `X-Request-Id` is taken from the request when it is a usable id, else generated, and is
/// echoed in the response. A generated id is not added to the request itself: requests
/// share an upstream fetch only when all their fields agree, and a fresh id on each would
/// keep them apart.
public struct AccessLog: Sendable {
    let logger: Logger
    let series: RequestSeries
    /// Whether a pass-through route covers a path (the request then counts as `pass-through`).
    let passThroughCovers: @Sendable (Substring) -> Bool
    let requestIDs = RequestIDs()
    /// The process's own output when `logger` writes there (always, outside tests): lines
    /// are then written as bytes straight to it, without a metadata dictionary per line.
    private let direct: Direct?

    /// What the fast path needs, read once: where lines go, the level, and the pieces every
    /// line is made of (`RenderedPieces`): each level's line head, and the handler's own
    /// fields rendered and placed by key among the access line's.
    private final class Direct: Sendable {
        let sink: LogSink
        let level: Logger.Level
        let writesJSON: Bool
        /// before(i): the handler's fields that sort before `AccessLog.keys[i]`, then that
        /// key as the format writes it before a value; after(n): the handler's fields that
        /// sort after the first n keys (all that are left once n access fields are written);
        /// then the heads of `info`, `warning` and `error` lines, each in two parts.
        let pieces: RenderedPieces

        init(_ output: LogOutput) {
            sink = output.sink
            level = output.logLevel
            writesJSON = output.writesJSON
            var own = Array(repeating: [UInt8](), count: AccessLog.keys.count + 1)
            for (key, value) in output.sortedMetadata where !AccessLog.keys.contains(key) {
                let slot = AccessLog.keys.firstIndex { key < $0 } ?? AccessLog.keys.count
                own[slot] += LogLine.rendered(json: output.writesJSON, key, .metadata(value))
            }
            let before = AccessLog.keys.indices.map { own[$0] + LogLine.keyPrefix(json: output.writesJSON, AccessLog.keys[$0]) }
            let after = own.indices.map { Array(own[$0...].joined()) }
            let heads = [Logger.Level.info, .warning, .error].map(output.lineHead).flatMap { [$0.beforeTime, $0.afterTime] }
            pieces = RenderedPieces(before + after + heads)
        }

        /// Where the pieces of each kind start: one `before` per key, one `after` per number
        /// of keys written (none to all), then the heads. Stored, so a line reads no lazy global.
        private let firstAfter = AccessLog.keys.count
        private let firstHead = 2 * AccessLog.keys.count + 1

        func before(_ slot: Int) -> UnsafeRawBufferPointer { pieces[slot] }
        func after(_ written: Int) -> UnsafeRawBufferPointer { pieces[firstAfter + written] }

        /// A new line of `level` (info, warning or error), up to its message.
        func line(_ level: Logger.Level) -> LogLine {
            let head = firstHead + (level == .info ? 0 : level == .warning ? 2 : 4)
            return LogLine(json: writesJSON, beforeTime: pieces[head], afterTime: pieces[head + 1])
        }
    }

    /// The access line's fields, in the order they are written (key order, as every line).
    static let keys = ["bytes", "cache_status", "client", "duration_ms", "request_id", "route", "status", "upstream_ms"]

    public init(logger: Logger, series: RequestSeries, passThroughCovers: @escaping @Sendable (Substring) -> Bool = { _ in false }) {
        self.logger = logger
        self.series = series
        self.passThroughCovers = passThroughCovers
        direct = (logger.handler as? LogOutput).map(Direct.init)
    }

    /// The router's answers, logged and counted. The series must number routes as this
    /// router does (made from its `paths`): a request counts under the route that matched.
    public func wrap(_ router: Router) -> HTTPHandler {
        precondition(series.routes == router.paths, "the request series was made for another router")
        return { request in
            let start = MonotonicClock.nanoseconds()
            let id = requestIDs.id(for: request.headers["x-request-id"])
            var matched: Int?
            switch router.handle(request, matchedPath: &matched) {
            case .now(var response):
                record(request, &response, route: matched, id: id, start)
                return .now(response)
            case .later(let work):
                return .later { [matched] in
                    var response = await work()
                    record(request, &response, route: matched, id: id, start)
                    return response
                }
            }
        }
    }

    /// Adds `X-Request-Id`, counts the request, and writes its line; in place, as a copy of
    /// the response per request was a measurable part of the hit path.
    private func record(_ request: HTTPRequest, _ response: inout HTTPResponse, route matched: Int?, id: RequestIDs.ID, _ start: UInt64) {
        let idOctets = response.lines.add("X-Request-Id", id.append)
        let nanoseconds = Int(MonotonicClock.nanoseconds() &- start)
        let route = series.route(matched: matched, passThrough: passThroughCovers(request.path))
        let result = response.cacheOutcome
        series.record(route, status: response.status, result: result, nanoseconds: nanoseconds)
        let level: Logger.Level = response.status >= 500 ? .error : result == .standIn ? .warning : .info
        guard (direct?.level ?? logger.logLevel) <= level else { return }
        let upstream = response.headers["server-timing"].flatMap(Self.upstreamMilliseconds)
        // The fields in key order, each with its slot in `keys`: one list for both paths.
        func fields(_ put: (Int, LogLine.Value) -> Void) {
            put(0, .integer(request.method == .head ? 0 : response.body.count))
            put(1, response.lines.valueOctets("cache-status").map { .octets($0) } ?? .text("-"))
            put(2, .text(request.clientAddress))
            put(3, .thousandths((nanoseconds + 500) / 1000))  // microseconds: thousandths of a ms
            put(4, .octets(response.lines.bytes[idOctets]))
            put(5, .text(series.label(route)))
            put(6, .integer(response.status))
            if let upstream { put(7, .metadata(.stringConvertible(upstream))) }
        }
        guard let direct else {
            var metadata: Logger.Metadata = [:]
            fields { metadata[Self.keys[$0]] = $1.metadata }
            logger.log(level: level, "\(request.method) \(request.target) \(response.status)", metadata: metadata)
            return
        }
        var line = direct.line(level)
        line.writeAccessMessage(method: request.method.description, target: request.target, status: response.status)
        var written = 0
        fields { slot, value in
            line.append(rendered: direct.before(slot))
            line.write(value)
            written += 1
        }
        line.append(rendered: direct.after(written))
        line.finish(into: direct.sink)
    }

    /// The `dur` of the `upstream` metric in a Server-Timing value.
    static func upstreamMilliseconds(_ timing: String) -> Double? {
        guard let metric = timing.split(separator: ",").first(where: { $0.trimmingOWS().hasPrefix("upstream;") }),
              let duration = metric.split(separator: ";").first(where: { $0.trimmingOWS().hasPrefix("dur=") }) else { return nil }
        return Double(duration.trimmingOWS().dropFirst(4))
    }
}

/// Request ids: the client's when it is 1 to 128 visible ASCII characters, else a new one,
/// made of a random prefix per process and a counter (unique, and no system call per request).
public final class RequestIDs: Sendable {
    private let prefix = UInt32.random(in: .min ... .max)
    private let next = Atomic<UInt64>(0)

    public init() {}

    /// A request's id, written straight into the response: a made one is never a String.
    public enum ID: Sendable {
        case given(String)
        /// `prefix-number`, both in lower-case hex without leading zeros. Two integers, not
        /// text: a made id is copied without a retain and written in one copy.
        case made(prefix: UInt32, number: UInt64)

        public func append(to out: inout [UInt8]) {
            switch self {
            case .given(let text):
                out.append(contentsOf: text.utf8)
            case .made(let prefix, let number):
                // Right to left on the stack, then one copy: an append per part cost twice as much.
                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 25) { text in
                    var start = Self.writeHex(number, endingAt: text.count, in: text) - 1
                    text[start] = 0x2D
                    start = Self.writeHex(UInt64(prefix), endingAt: start, in: text)
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: text[start...]))
                }
            }
        }

        /// Writes `value`'s hex digits to end just before `end`; answers where they start.
        private static func writeHex(_ value: UInt64, endingAt end: Int, in text: UnsafeMutableBufferPointer<UInt8>) -> Int {
            var start = end
            var rest = value
            repeat {
                start -= 1
                let digit = UInt8(truncatingIfNeeded: rest & 0xF)
                text[start] = digit < 10 ? 0x30 + digit : 0x57 + digit  // 0x57 + 10 is "a"
                rest >>= 4
            } while rest != 0
            return start
        }
    }

    public func id(for given: String?) -> ID {
        if let given, (1...128).contains(given.utf8.count), given.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) { return .given(given) }
        return .made(prefix: prefix, number: next.add(1, ordering: .relaxed).newValue)
    }
}
