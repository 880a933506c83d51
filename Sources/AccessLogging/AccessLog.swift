import HTTPCore
import CacheVocabulary
import Bodies
import RequestTracing
public import HTTPServer
public import Logging
import Synchronization
import Observability

/// One access log line and the request series per request, wrapped around every handler so
/// async answers are logged when they leave. The line has what a log pipeline indexes: the
/// client address, method, path (no query), route, origin, status, cache status, bytes,
/// duration, user agent (its first `userAgentLimit` bytes) and request id; the message is
/// `METHOD TARGET STATUS`, a credential's value in the query `<redacted>`. It is `info`, `warning`
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
    /// The configured route that covers a path no path of the router's matched (a
    /// pass-through route, an aggregate a reload added); nil when none does (`other`).
    let unroutedSeries: @Sendable (Substring) -> Labels?

    /// What a configured route's requests are labelled with, resolved when the route is made:
    /// its request series, and for a pass-through route its origin's name (`origin` in the line).
    public struct Labels: Sendable {
        public let series: RequestSeries.Route
        public let origin: String?

        public init(series: RequestSeries.Route, origin: String? = nil) {
            self.series = series
            self.origin = origin
        }
    }
    let requestIDs = RequestIDs()

    public init(logger: Logger, series: RequestSeries, unroutedSeries: @escaping @Sendable (Substring) -> Labels? = { _ in nil }) {
        self.logger = logger
        self.series = series
        self.unroutedSeries = unroutedSeries
    }

    /// An answer the server gave on its own, before any route heard of the request
    /// (`HTTPServerConfiguration.refusals`): counted under `other`, and a line with what is
    /// known of it, at the level an answer of its status gets.
    public func refused(status: Int, detail: String, client: String) {
        series.recordRefusal(status: status)
        logger.log(level: status >= 500 ? .error : .info, "refused \(status)", metadata: [
            "status": .stringConvertible(status), "client": .string(client), "detail": .string(detail),
            "route": .string(RequestSeries.otherLabel), "method": "-", "path": "-",
        ], source: "larder")
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
    /// `trace` names the request's span in the line (when it is sampled), read only for a line
    /// that is written; the route it was counted under is returned, for the span's `http.route`.
    @discardableResult
    func record(_ request: HTTPRequest, _ response: inout HTTPResponse, route matched: Int?, id: RequestIDs.ID, _ start: UInt64,
                trace: (@Sendable () -> TraceIDs?)? = nil) -> RequestSeries.Route {
        let idOctets = response.headers.add("X-Request-Id", id.append)
        let nanoseconds = Int(MonotonicClock.nanoseconds() &- start)
        var origin: String?
        let route = series.route(matched: matched, unrouted: {
            let labels = unroutedSeries(request.path)
            origin = labels?.origin
            return labels?.series
        }())
        let result = response.cacheOutcome
        series.record(route, status: response.status, result: result, nanoseconds: nanoseconds)
        let level: Logger.Level = response.status >= 500 ? .error : result == .standIn ? .warning : .info
        if request.method != .head, Self.isSentApart(response.body) {
            // Written when the exchange ends, with the body bytes that went (nginx's
            // `$body_bytes_sent`): a client that reads a little of a large answer and leaves
            // is not logged as having had it all. Only such bodies pay for the wait.
            guard logger.logLevel <= level else { return route }
            let (logger, message) = (logger, Self.message(request, response.status))
            var made = self.fields(request, response, route: route, origin: origin, idOctets: idOctets, nanoseconds: nanoseconds,
                                   into: AccessFields.template)
            if let trace = trace?() { Self.add(trace, to: &made) }
            let fields = made
            response.bodySent = { sent in
                var fields = fields
                fields.values[AccessFields.bytes] = .stringConvertible(sent)
                logger.log(level: level, message, metadata: fields, source: "larder")
            }
            return route
        }
        // Like every other line, through the logger: its handler's level is read now, and the
        // message and fields are made only when the line passes it. The source is given, as
        // swift-log would otherwise work it out from the file's name on every line.
        logger.log(level: level, Self.message(request, response.status), metadata: {
            var fields = self.fields(request, response, route: route, origin: origin, idOctets: idOctets, nanoseconds: nanoseconds,
                                     into: AccessFields.thisThread())
            defer { AccessFields.keep(fields) }
            // A small body leaves with its head, whole.
            fields.values[AccessFields.bytes] = request.method == .head ? .stringConvertible(0) : .stringConvertible(response.body.count)
            if let trace = trace?() { Self.add(trace, to: &fields) }
            return fields
        }(), source: "larder")
        return route
    }

    /// Bodies the server sends on their own after the head (rather than copied in beside it):
    /// a client can leave part way through one.
    static func isSentApart(_ body: Body) -> Bool {
        !body.isInMemory || body.count >= HTTPResponse.bodySentApartMinimum
    }

    /// Every field of the line but `bytes`.
    private func fields(_ request: HTTPRequest, _ response: HTTPResponse, route: RequestSeries.Route, origin: String?, idOctets: Range<Int>,
                               nanoseconds: Int, into fields: Logger.Metadata) -> Logger.Metadata {
        var fields = fields
        // This answer's own fields, never among those rendered ahead of time. An aggregate's
        // answer says how each of its parts was answered.
        fields.values[AccessFields.cacheStatus] = "-"
        response.headers.lines.firstValues(named: Self.fieldsRead) { name, value in
            switch name {
            case 0: fields.values[AccessFields.cacheStatus] = .string(value)
            case 1: fields["parts"] = .string(value)
            default: if let upstream = Self.upstreamMilliseconds(value) { fields["upstream_ms"] = .stringConvertible(upstream) }
            }
        }
        fields.values[AccessFields.client] = .string(request.clientAddress)
        fields.values[AccessFields.method] = .string(request.method.description)
        // The target itself when it has no query: no string made.
        fields.values[AccessFields.path] = .string(request.query == nil ? request.target : String(request.path))
        fields.values[AccessFields.userAgent] = .string(Self.userAgent(request.headers))
        fields.values[AccessFields.duration] = .stringConvertible(Double((nanoseconds + 500) / 1000) / 1000)
        fields.values[AccessFields.requestID] = .string(String(decoding: response.headers.lines.bytes[idOctets], as: UTF8.self))
        fields.values[AccessFields.route] = .string(series.label(route))
        // A pass-through request names its origin (`scheme://host:port`), as `/metrics` does.
        fields.values[AccessFields.origin] = .string(origin ?? "-")
        fields.values[AccessFields.status] = .stringConvertible(response.status)
        return fields
    }

    /// The answer's fields the line reads, in `record`'s order.
    private static let fieldsRead: [StaticString] = ["Cache-Status", "Larder-Parts", "Server-Timing"]

    /// The most of a `User-Agent` a line holds, in bytes: a client chooses its length (up to
    /// the server's 16 KiB of fields), and a log pipeline indexes the field.
    static let userAgentLimit = 256

    /// The request's first `User-Agent`, cut to `userAgentLimit` bytes at a character's
    /// start (so it stays UTF-8); `-` when it has none. Escaped as every value is, when written.
    static func userAgent(_ headers: HTTPHeaders) -> String {
        guard let agent = headers["user-agent"] else { return "-" }
        let utf8 = agent.utf8
        guard utf8.count > userAgentLimit else { return agent }
        var end = utf8.index(utf8.startIndex, offsetBy: userAgentLimit)
        while UTF8.isContinuation(utf8[end]) { utf8.formIndex(before: &end) }
        return String(Substring(utf8[..<end]))
    }

    /// `GET /target 200`, made in one allocation: 700 instructions per line against 1,500
    /// through string interpolation (gate path memory-hit). A query parameter named like a
    /// credential (`RedactedURL`) has its value `<redacted>`, as in every URL Larder prints.
    static func message(_ request: HTTPRequest, _ status: Int) -> Logger.Message {
        let method = request.method.description
        var target = request.target
        if let query = request.query, RedactedURL.hasCredential(query: query) {
            target = request.path + "?" + RedactedURL.redacted(query: query)
        }
        let capacity = method.utf8.count + target.utf8.count + 2 + 20
        let text = target.withUTF8 { target in
            String(unsafeUninitializedCapacity: capacity) { out in
                var end = out.initialize(fromContentsOf: method.utf8)
                out[end] = 0x20
                end += 1
                end = out[end...].initialize(fromContentsOf: target)
                out[end] = 0x20
                end += 1
                return DecimalText.withDigits(status) { out[end...].initialize(fromContentsOf: $0) }
            }
        }
        return Logger.Message(stringLiteral: text)
    }

    /// The `dur` of the `upstream` metric in a Server-Timing value. Split on its bytes: split
    /// by Characters it cost 27,600 instructions per logged miss, three quarters of the access
    /// line, and on its bytes 9,800 (gate path built-in-miss).
    static func upstreamMilliseconds(_ timing: String) -> Double? {
        func members(_ text: Substring, _ separator: UInt8) -> LazyMapSequence<[Substring.UTF8View], Substring> {
            text.utf8.split(separator: separator).lazy.map { Substring($0).trimmingOWS() }
        }
        guard let metric = members(timing[...], UInt8(ascii: ",")).first(where: { $0.utf8.starts(with: "upstream;".utf8) }),
              let duration = members(metric, UInt8(ascii: ";")).first(where: { $0.utf8.starts(with: "dur=".utf8) }) else { return nil }
        return Double(Substring(duration.utf8.dropFirst(4)))
    }
}

/// The access line's fields, as a dictionary that already holds every key, set at each
/// value's index (no key hashed), and kept per thread from one line to the next (no
/// dictionary made and freed per line): a dictionary literal per line cost 4,100 instructions
/// per logged hit, over half of it hashing its keys (gate path memory-hit-logged).
enum AccessFields {
    static let template: Logger.Metadata = {
        // Room for the two a line may add (`parts`, `upstream_ms`), so adding them never regrows it.
        var fields = Logger.Metadata(minimumCapacity: 13)
        for key in ["bytes", "cache_status", "client", "duration_ms", "method", "origin", "path", "request_id", "route", "status",
                    "user_agent"] { fields[key] = "" }
        return fields
    }()
    /// This thread's fields, the last line's values still in them: the line logged before
    /// has let them go (unless its handler kept them), so setting them writes in place,
    /// with no dictionary made and freed per line.
    static func thisThread() -> Logger.Metadata {
        var fields = Logger.Metadata()
        kept.withValue { swap(&fields, &$0) }
        // Empty when the last line gained a key and was not kept.
        return fields.isEmpty ? template : fields
    }

    /// Keeps a line's fields for this thread's next line, unless they gained a key.
    static func keep(_ fields: Logger.Metadata) {
        guard fields.count == template.count else { return }
        kept.withValue { $0 = fields }
    }

    private static let kept = PerThread { template }

    // A copy keeps its original's buckets, so an index into the template is one into each copy.
    static let bytes = template.index(forKey: "bytes")!
    static let cacheStatus = template.index(forKey: "cache_status")!
    static let client = template.index(forKey: "client")!
    static let duration = template.index(forKey: "duration_ms")!
    static let method = template.index(forKey: "method")!
    static let origin = template.index(forKey: "origin")!
    static let path = template.index(forKey: "path")!
    static let requestID = template.index(forKey: "request_id")!
    static let route = template.index(forKey: "route")!
    static let status = template.index(forKey: "status")!
    static let userAgent = template.index(forKey: "user_agent")!
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
