import Settings
import Caching
import Foundation
import HTTPCore
import Bodies
import HTTPServer

/// How each part of an aggregate ended, and the aggregate's answer made of them: the body,
/// its lifetime and age, who may keep it, one `Cache-Status` for the whole and one per part.
enum AggregateAnswer {
    /// How one part's lookup ended, before its JSON is looked at.
    enum Ending: Sendable {
        /// The cache answered; `late` when the deadline passed and a stored answer stood in.
        case answered(CacheAnswer, late: Bool)
        case failed(CacheFailure)
        /// Refused before its cache was asked (no upstream configured).
        case refused(HTTPResponse)
        /// The deadline passed and no stored answer may stand in.
        case late
    }

    /// A part as the answer uses it: its JSON, or the response it alone would have given.
    struct Result {
        var shaped: PartShape.Shaped?
        var answer: CacheAnswer?
        var status: CacheStatus?
        var problem: HTTPResponse?
        var late = false
    }

    static func result(of part: AggregatePart, _ ending: Ending, deadline: Duration) -> Result {
        switch ending {
        case .answered(let answer, let late):
            guard answer.rendered.status == 200 else {
                return Result(status: answer.status, problem: unusable(part, "its route answered \(answer.rendered.status)"), late: late)
            }
            guard let body = answer.rendered.body.inMemory, body.count < AggregatePart.largestAnswer else {
                let limit = "\(AggregatePart.largestAnswer >> 20) MiB"
                return Result(status: answer.status,
                              problem: unusable(part, "its answer is \(limit) or more, and a part's answer is read as JSON only under \(limit)"),
                              late: late)
            }
            switch part.shape.shape(body) {
            case .success(let shaped): return Result(shaped: shaped, answer: answer, status: answer.status, late: late)
            case .failure(let problem): return Result(status: answer.status, problem: unusable(part, problem.reason), late: late)
            }
        case .failed(let failure):
            var status: CacheStatus?
            if case .upstream(_, let tried) = failure { status = tried }
            return Result(status: status, problem: CachedResponse.failure(failure, part: part.name))
        case .refused(let response):
            return Result(problem: response)
        case .late:
            let milliseconds = Int(deadline.seconds * 1000)
            return Result(problem: ProblemDetails(status: 504, detail: "The \(part.name) part did not answer within the aggregate's deadline of "
                                                  + "\(milliseconds) ms, and no stored answer may stand in.").response(), late: true)
        }
    }

    private static func unusable(_ part: AggregatePart, _ reason: String) -> HTTPResponse {
        ProblemDetails(status: 502, detail: "The \(part.name) part cannot be used: \(reason).").response()
    }

    /// The aggregate's response: a required part's problem when one is missing (or when no
    /// part is there at all), else the parts' JSON.
    static func response(_ parts: [AggregatePart], _ results: [Result], merge: Bool, bodies: AggregateBodies, request: HTTPRequest) -> HTTPResponse {
        // One pass over the parts: the arrays of the plain way (used, missing, answers, their
        // ages) were a measurable part of an aggregate of memory hits.
        var missing = 0, failed: Int?
        var older: CacheAnswer?, freshness = Freshness()
        var forbidsReuse = false, isPrivate = false
        var status: CacheStatus?
        for (index, result) in results.enumerated() {
            guard result.shaped != nil, let answer = result.answer else {
                // A missing part's own status (its origin's 500, say) is in `Larder-Parts`:
                // the whole went forward for it, but no status of its is the answer's.
                if var part = result.status {
                    part.forwardStatus = nil
                    part.stored = false
                    status = status.map { combined($0, part) } ?? part
                }
                missing += 1
                if failed == nil || (parts[index].required && !parts[failed!].required) { failed = index }
                continue
            }
            if let part = result.status { status = status.map { combined($0, part) } ?? part }
            if answer.age > older?.age ?? -1 { older = answer }
            freshness.add(age: answer.age, lifetime: answer.lifetime)
            forbidsReuse = forbidsReuse || parts[index].forbidsReuse(answer)
            isPrivate = isPrivate || parts[index].isPrivate(answer)
        }
        if let failed, parts[failed].required || older == nil {
            var response = results[failed].problem ?? ProblemDetails(status: 502, detail: "The \(parts[failed].name) part is missing.").response()
            response.headers.add("Larder-Parts") { partsValue(parts, results, into: &$0) }
            return response
        }
        let oldest = older!
        let (age, maxAge) = (freshness.age, freshness.maxAge)
        let cacheControl = missing > 0 || forbidsReuse ? BuiltInRoute.CacheControlValue.noStore : isPrivate ? privateLifetime : publicLifetime
        // `stored` says a cache holds this answer: a whole that may not be kept is not held,
        // whatever its parts are.
        if missing > 0 || forbidsReuse { status?.stored = false }
        let (body, etag) = bodies.body(of: results) {
            merge ? merged(results.compactMap(\.shaped)) : nested(parts, results)
        }
        let rendered = RenderedResponse(json: body, date: oldest.entry.date ?? oldest.entry.responseTime, cacheControl: cacheControl,
                                        lifetime: maxAge, etag: etag)
        let answer = CacheAnswer(response: StoredResponse(entry: oldest.entry, rendered: rendered), age: age, lifetime: maxAge,
                                 status: status ?? CacheStatus(hit: true))
        var response = CachedResponse.make(answer, for: request, ranges: false)
        response.headers.add("Larder-Parts") { partsValue(parts, results, into: &$0) }
        if missing > 0 {
            response.headers.add("Larder-Missing", parts.indices.filter { results[$0].shaped == nil }.map { parts[$0].name }.joined(separator: ", "))
        }
        return response
    }

    private static let privateLifetime = BuiltInRoute.CacheControlValue(head: Array("private, max-age=".utf8), tail: [])
    private static let publicLifetime = BuiltInRoute.CacheControlValue(head: Array("public, max-age=".utf8), tail: [])

    /// The whole's age is its oldest part's, and it stays fresh as long as every part does:
    /// `max-age` is the shortest remaining lifetime plus that age (never below zero).
    struct Freshness: Equatable {
        private(set) var age = 0
        private var remaining = Int.max

        mutating func add(age: Int, lifetime: Int) {
            self.age = max(self.age, age)
            remaining = min(remaining, lifetime - age)
        }

        var maxAge: Int { remaining == .max ? 0 : max(0, remaining + age) }
    }

    /// `{"name":JSON,…}` in the declared order, `null` for a part that is missing.
    static func nested(_ parts: [AggregatePart], _ results: [Result]) -> [UInt8] {
        var body: [UInt8] = [UInt8(ascii: "{")]
        body.reserveCapacity(2 + parts.reduce(0) { $0 + $1.member.count + 1 } + results.reduce(0) { $0 + ($1.shaped?.json.count ?? 4) })
        for (index, part) in parts.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body += part.member
            body += results[index].shaped?.json ?? Array("null".utf8)
        }
        body.append(UInt8(ascii: "}"))
        return body
    }

    /// Every part's members in one object: parts in the declared order, each part's members
    /// by name; a member a later part has too takes that part's value, in the place the
    /// first one gave it.
    static func merged(_ shaped: [PartShape.Shaped]) -> [UInt8] {
        var members: [(name: String, json: [UInt8])] = []
        var position: [String: Int] = [:]
        for part in shaped {
            for member in part.members {
                if let at = position[member.name] {
                    members[at].json = member.json
                } else {
                    position[member.name] = members.count
                    members.append(member)
                }
            }
        }
        var body: [UInt8] = [UInt8(ascii: "{")]
        for (index, member) in members.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body += Array(JSONString.quote(member.name).utf8)
            body.append(UInt8(ascii: ":"))
            body += member.json
        }
        body.append(UInt8(ascii: "}"))
        return body
    }

    /// `Larder-Parts`, an RFC 8941 dictionary: each part's own Cache-Status as a string (the
    /// token `none` for a part no cache answered: its deadline passed, or it was refused
    /// before), with `missing` when it is not in the answer and `deadline` when the deadline
    /// cut it short (a stored answer standing in, or nothing).
    /// Written as bytes, each status by its own writer: as Strings they were a twentieth of an
    /// aggregate's cost.
    static func partsValue(_ parts: [AggregatePart], _ results: [Result], into line: inout [UInt8]) {
        for (index, part) in parts.enumerated() {
            if index > 0 { line += ", ".utf8 }
            line += part.partsKey
            if let status = results[index].status {
                line.append(UInt8(ascii: "\""))
                status.append(to: &line)
                line.append(UInt8(ascii: "\""))
            } else {
                line += "none".utf8
            }
            if results[index].shaped == nil { line += ";missing".utf8 }
            if results[index].late { line += ";deadline".utf8 }
        }
    }

    /// One Cache-Status for an answer made of two: a hit only when both parts were hits;
    /// otherwise the part that went furthest to the upstream speaks for both.
    static func combined(_ a: CacheStatus, _ b: CacheStatus) -> CacheStatus {
        if a.hit && b.hit {
            // The tier further from memory speaks for both.
            let detail: CacheStatus.Detail = a.tier.ordinal >= b.tier.ordinal ? a.detail ?? .memory : b.detail ?? .memory
            return CacheStatus(hit: true, ttl: min(a.ttl ?? 0, b.ttl ?? 0), detail: detail)
        }
        func rank(_ s: CacheStatus) -> Int {
            switch s.forward { case .miss?, .method?: 3; case .stale?: 2; case .request?: 1; case nil: 0 }
        }
        var lead = rank(a) >= rank(b) ? a : b
        lead.stored = a.stored || b.stored
        lead.collapsed = a.collapsed || b.collapsed
        return lead
    }
}
