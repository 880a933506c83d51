import Foundation
import HTTPCore
import TestSupport
@testable import Caching
@testable import HTTPServer
@testable import Routes
@testable import Settings

/// One fuzz target per decoder of outside bytes. Each takes arbitrary bytes and must return
/// (a value or a typed error) without trapping; where a decoder has a property that must
/// hold (the same result at any split, a round trip), the target checks it and traps when
/// it fails, so the fuzzer reports a logic bug like a crash.
enum FuzzTargets {
    typealias Target = @Sendable (UnsafeRawBufferPointer) -> Void

    static let all: [(name: String, run: Target)] = [
        ("request-parser", requestParser),
        ("disk-entry", diskEntry),
        ("cache-fields", cacheFields),
        ("http-date", httpDate),
        ("range", range),
        ("upstream-formats", upstreamFormats),
        ("upstream-json", upstreamJSON),
        ("response-head", responseHead),
        ("target-path", targetPath),
        ("place-query", placeQuery),
        ("aggregate-query", aggregateQuery),
        ("part-shape", partShape),
        ("config-file", configFile),
    ]

    static func named(_ name: String) -> Target? { all.first { $0.name == name }?.run }

    // MARK: Request parser and chunked framing

    /// The parser over the input whole, then split in two where the first byte says: both
    /// must give the same requests and the same error.
    static let requestParser: Target = { data in
        let bytes = Array(data)
        let limits = RequestParser.Limits(maxRequestLineBytes: 512, maxHeaderBytes: 1024, maxHeaderCount: 16, maxBodyBytes: 4096)
        let whole = parse([bytes[...]], limits)
        let split = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
        let parts = parse([bytes[..<split], bytes[split...]], limits)
        check(whole.requests.count == parts.requests.count && whole.error == parts.error, "split changed the parse")
        check(zip(whole.requests, parts.requests).allSatisfy { RequestParser.Step.request($0) == .request($1) }, "split changed a request")
    }

    private static func parse(_ chunks: [ArraySlice<UInt8>], _ limits: RequestParser.Limits) -> (requests: [HTTPRequest], error: HTTPParseError?) {
        var parser = RequestParser(limits: limits)
        var buffer = InputBuffer()
        var requests: [HTTPRequest] = []
        for chunk in chunks {
            buffer.append(chunk)
            while true {
                switch parser.next(&buffer) {
                case .needMore: break
                case .request(let request):
                    requests.append(request)
                    continue
                case .bodyEnded: continue  // no spool directory here: never streamed
                case .failure(let error): return (requests, error)
                }
                break
            }
        }
        return (requests, nil)
    }

    // MARK: Disk entries

    /// Raw bytes as a file (whole, and as the head the index load reads); then the same
    /// bytes as key, metadata, body and rendition of an entry with a valid checksum (so the
    /// metadata and rendition decoders are reached); a decoded entry must round-trip with its
    /// rendition, and its head must agree with it.
    static let diskEntry: Target = { data in
        let bytes = Array(data)
        _ = DiskEntryCodec.decode(bytes, key: "k")
        _ = DiskEntryCodec.headLength(Array(bytes.prefix(DiskEntryCodec.headerSize)))
        _ = DiskEntryCodec.decodeHead(bytes)
        let cut = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
        let kept = bytes.count < 2 ? bytes.count : cut + Int(bytes[1]) % (bytes.count - cut + 1)
        let framed = DiskEntryCodec.frame(key: Array("k".utf8), meta: Array(bytes[..<cut]), body: Array(bytes[cut..<kept]),
                                          rendition: Array(bytes[kept...]))
        if let decoded = DiskEntryCodec.decodeKeyed(framed) {
            let entry = decoded.entry
            let again = DiskEntryCodec.decodeKeyed(DiskEntryCodec.encode(key: "k", entry: entry, rendition: decoded.rendition))
            check(again?.entry == entry && again?.rendition == decoded.rendition, "a decoded entry does not round-trip")
            let head = DiskEntryCodec.decodeHead(framed)
            check(head?.status == entry.status && head?.headers.elementsEqual(entry.headers, by: { $0 == $1 }) == true,
                  "the head of an entry does not agree with the entry")
            _ = Freshness.currentAge(of: entry, now: Date())
        }
    }

    // MARK: Cache-Control, CDN-Cache-Control, Vary, Age, Expires and freshness

    /// Input lines as `name: value` fields of a stored response and of a request; every
    /// computation a lookup makes runs on them.
    static let cacheFields: Target = { data in
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        var fields: HTTPHeaders = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields.append((String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingOWS().description))
        }
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let entry = CacheEntry(status: 200, headers: fields, body: Array(data.prefix(16)), requestTime: now, responseTime: now)
        let request = RequestDirectives(cacheControl: fields.map(\.value), pragma: fields.map(\.value))
        for policy in [CachePolicy.sharedCache, CachePolicy(defaultLifetime: 60, staleWhileRevalidate: 30, staleIfError: 86_400)] {
            let decision = CacheDecision.decide(entry, now: now.addingTimeInterval(Double(data.count) * 1000), request: request, policy: policy)
            _ = decision.ttl
            _ = Freshness.ageHeader(decision.age)
            for rule in [StorageRule.sharedCache, .decodedAnswers(storesPrivate: true)] {
                _ = rule.mayStore(entry, request: request, hasAuthorization: false, policy: policy)
            }
        }
        _ = TargetedCacheControl.parse(fields.map(\.value))
        let vary = Vary(of: entry)
        _ = VariantIndex(vary: vary).variantKey(CacheKey(route: "fuzz", resource: "k"), request: fields)
    }

    // MARK: HTTP dates

    /// A date that parses formats back to the same instant.
    static let httpDate: Target = { data in
        guard let date = HTTPDateParser.parse(String(decoding: data, as: UTF8.self)) else { return }
        let seconds = Int(date.timeIntervalSince1970)
        check(HTTPDateParser.parse(HTTPDate.format(epochSeconds: seconds)) == date, "a parsed date does not round-trip")
    }

    // MARK: Range

    /// A selected range always lies inside the representation.
    static let range: Target = { data in
        let length = data.isEmpty ? 0 : Int(data[0]) * 37
        switch ByteRange.select(String(decoding: data.dropFirst(), as: UTF8.self), length: length) {
        case .partial(let range): check(range.first >= 0 && range.first <= range.last && range.last < length, "range outside the body")
        case .whole, .unsatisfiable: break
        }
    }

    // MARK: Upstream formats

    /// Any bytes decode or are refused, and what decodes is JSON; the dates read back as they were written.
    static let upstreamFormats: Target = { data in
        let entry = CacheEntry(status: 200, headers: [], body: Array(data), requestTime: Date(), responseTime: Date())
        for json in [try? OpenMeteoFormat.json(resource: "52.52,13.41", entry: entry), try? BalanceFormat.json(entry: entry)] {
            guard let json else { continue }
            check((try? JSONValue(reading: json)) != nil, "a decoded answer is not JSON")
        }
        let text = String(decoding: data, as: UTF8.self)
        if let iso = OpenMeteoFormat.isoTime(openMeteo: text) {
            check(iso.hasPrefix(text.prefix(16)), "a time at offset 0 moved")
        }
        if let date = BalanceFormat.parseDate(text), text.hasSuffix("+0000") {
            check(date.text(separator: " ", zone: " +0000") == text, "a balance date does not read back")
        }
    }

    /// Any bytes, through Larder's two readers of JSON: the Codable types of the upstream
    /// formats (`JSONSample` has every kind of member) and the untyped `JSONValue` of
    /// aggregates and the admin API. Both are Foundation's `JSONDecoder`, so comparing their
    /// grammar would compare it with itself; what can differ is the untyped reader's own
    /// cases and its writer. So neither may trap; where both read the bytes, the untyped
    /// value written back reads as the same sample (the two agree on every member the typed
    /// one reads, a `Float` within the step a second rounding makes); and what the untyped
    /// reader reads, it reads back from its own text.
    static let upstreamJSON: Target = { data in
        let bytes = Array(data)
        let typed = try? JSONDecoder().decode(JSONSample.self, from: Data(bytes))
        guard let value = try? JSONValue(reading: bytes) else { return }
        check((try? JSONValue(reading: value.json)) == value, "an untyped value does not read back from its own text")
        guard let typed else { return }
        let retyped = try? JSONDecoder().decode(JSONSample.self, from: Data(value.json))
        check(retyped.map(typed.agrees) == true, "the untyped reader disagrees with the typed one")
    }

    /// A `/weather` query (after a first byte choosing the precision): a resource or named
    /// problems, and a resource is the canonical pair, each coordinate as `Coordinate` writes
    /// it, which parses back to itself.
    static let placeQuery: Target = { data in
        let precision = data.first.map { Int($0) % 7 } ?? 2
        let query = Substring(String(decoding: data.dropFirst(), as: UTF8.self))
        guard case .success(let place) = Place.parse(query: query, precision: precision) else { return }
        let parts = place.resource.split(separator: ",", omittingEmptySubsequences: false)
        check(parts.count == 2, "a resource is not a pair")
        for (part, limit) in zip(parts, [90, 180]) {
            check((try? Coordinate(parsing: part, limit: limit, precision: precision))?.text == String(part), "a coordinate is not canonical")
        }
        guard case .success(let again) = Place.parse(query: "lat=\(parts[0])&lon=\(parts[1])", precision: precision) else {
            return check(false, "the canonical pair is refused")
        }
        check(again.resource == place.resource, "the canonical pair parses to another")
    }

    // MARK: Aggregates

    /// An aggregate's query: each value found is the raw text after `name=` up to the next
    /// `&`, and the query made again of those values gives the same values.
    static let aggregateQuery: Target = { data in
        let names = ["lat", "lon", "q"]
        let query = Substring(String(decoding: data, as: UTF8.self))
        guard case .success(let values) = Aggregate.values(of: names, in: query) else { return }
        check(values.count == names.count && values.allSatisfy { !$0.contains("&") }, "a value holds a separator")
        let again = zip(names, values).map { "\($0)=\($1)" }.joined(separator: "&")
        check((try? Aggregate.values(of: names, in: again[...]).get()) == values, "the values do not make the same query")
    }

    /// An origin's body shaped by a pointer and fields taken from the input (the first byte
    /// says where the body starts): a shape or a reason, and a shape is JSON.
    static let partShape: Target = { data in
        guard let split = data.first.map({ Int($0) % data.count }), split > 0 else { return }
        let selector = String(decoding: data[1..<max(1, split)], as: UTF8.self).split(separator: " ", maxSplits: 1)
        let pointer = selector.first.map(String.init).flatMap { AggregateDeclaration.isJSONPointer($0) ? $0 : nil }
        let fields = selector.count > 1 ? selector[1].split(separator: ",").map(String.init) : nil
        let body = Array(data[split...])
        for merge in [false, true] {
            guard case .success(let shaped) = PartShape(pointer: pointer, fields: fields, trusted: false, merge: merge).shape(body) else { continue }
            check((try? JSONValue(reading: shaped.json)) != nil, "a shape is not JSON")
            check(shaped.members.allSatisfy { (try? JSONValue(reading: $0.json)) != nil }, "a merged member is not JSON")
        }
    }

    // MARK: An origin's response head

    /// Lines as libcurl hands them over; whatever is accepted is valid field syntax.
    static let responseHead: Target = { data in
        var head = ReceivedFields()
        var start = data.startIndex
        for index in data.indices where data[index] == 0x0A {
            head.add(line: UnsafeRawBufferPointer(rebasing: data[start...index]))
            start = index + 1
        }
        if start < data.endIndex { head.add(line: UnsafeRawBufferPointer(rebasing: data[start...])) }
        guard head.violation == nil else { return }
        for field in head.fields {
            check(FieldSyntax.isToken(field.name.utf8), "an accepted name is not a token")
            check(FieldSyntax.isValue(FieldText.bytes(field.value)), "an accepted value has a control character")
        }
    }

    // MARK: Request target paths

    /// A normalised path has no dot segments, stays under `/`, and normalising it again
    /// changes nothing.
    static let targetPath: Target = { data in
        let text = "/" + String(decoding: data.filter { $0 > 0x20 && $0 < 0x7F }, as: UTF8.self)
        guard let normalized = TargetPath.normalized(text) else { return }
        let path = normalized.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        check(path.hasPrefix("/"), "a normalised path lost its root")
        check(!path.split(separator: "/").contains { $0 == "." || $0 == ".." }, "a dot segment survived")
        check(TargetPath.normalized(normalized) == normalized, "normalising is not idempotent")
    }

    // MARK: The configuration file

    /// A configuration file's text, YAML or JSON: its shape (every key, route and aggregate)
    /// is read, or refused with each problem placed at the file and a line of it, whatever
    /// its nesting, aliases, anchors, tags or bytes.
    static let configFile: Target = { data in
        do throws(ConfigurationError) {
            _ = try ConfigFile.shape(of: String(decoding: data, as: UTF8.self), path: "fuzz.yaml")
        } catch {
            for problem in error.problems {
                let line = problem.dropFirst("fuzz.yaml:".count).prefix { $0 != ":" }
                check(problem.hasPrefix("fuzz.yaml:") && Int(line).map { $0 >= 1 } == true, "a problem is not placed on a line: \(problem)")
            }
        }
    }

    /// The input being run, for the message of a failed property (libFuzzer saves it anyway).
    nonisolated(unsafe) static var current: [UInt8] = []

    /// A broken property is a crash, so the fuzzer keeps the input that shows it.
    private static func check(_ condition: Bool, _ message: String) {
        if !condition {
            fatalError("fuzz property failed: \(message); input (hex): \(current.map { String($0, radix: 16) }.joined(separator: " "))")
        }
    }
}
