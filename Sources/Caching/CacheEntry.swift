public import Foundation
public import HTTPCore
import CacheVocabulary
public import Bodies

/// A stored upstream answer as the upstream gave it: status, header fields, body, and the
/// request and response times around the exchange. This, not any rendering of it, is what
/// the disk keeps, so a change of the service's own JSON never invalidates the cache.
///
/// Immutable and a class, so handing one from a tier to a caller is a single retain.
public final class CacheEntry: Sendable {
    public let status: Int
    public let headers: HTTPHeaders
    /// In memory, or (an answer too large to hold, relayed and never stored) a spool file's region.
    public let body: Body
    /// Clock reading when the request that produced this answer was sent.
    public let requestTime: Date
    /// Clock reading when the answer (or the 304 that last freshened it) arrived.
    public let responseTime: Date
    /// Informational responses that came before this answer when it was fetched: passed on
    /// to the requests that fetched it, never to a later hit, and never written to a tier
    /// (an entry read back has none).
    public let interim: [InterimResponse]

    // Read once from the headers, because every lookup needs them.
    /// The directives this cache obeys: `CDN-Cache-Control` when it is valid (RFC 9213),
    /// else `Cache-Control`.
    public let cacheControl: CacheControl
    /// Whether `cacheControl` came from `CDN-Cache-Control` (then `Expires` is ignored).
    public let isTargeted: Bool
    /// Whether `Cache-Control` says `private` to the clients and caches after Larder, which
    /// Larder's own `cacheControl` may not (`override: [private]`, or `CDN-Cache-Control` in
    /// its stead): what an aggregate that embeds the answer must say too.
    public let isPrivateDownstream: Bool
    public let date: Date?
    public let ageValue: Int
    public let etag: String?
    public let lastModified: String?
    /// `Expires` as given: nil when absent; `.distantPast` when present but invalid (RFC 9111 §5.3).
    public let expires: Date?

    public convenience init(status: Int, headers: HTTPHeaders, body: [UInt8], requestTime: Date, responseTime: Date, interim: [InterimResponse] = []) {
        self.init(status: status, headers: headers, body: .bytes(body), requestTime: requestTime, responseTime: responseTime, interim: interim)
    }

    public init(status: Int, headers: HTTPHeaders, body: Body, requestTime: Date, responseTime: Date, interim: [InterimResponse] = []) {
        self.interim = interim
        self.status = status
        self.body = body
        self.requestTime = requestTime
        self.responseTime = responseTime
        // One pass with an ASCII comparison: this runs for every entry fetched or read from disk.
        var cacheControlValues: [String] = []
        var targetedValues: [String] = []
        var date: String?, age: String?, etag: String?, lastModified: String?, expires: String?, override: String?
        var tagBytes = 0
        for field in headers {
            switch field.name.utf8.count {
            case 9 where HTTPHeaders.namesEqual(field.name, "cache-tag"): tagBytes += field.value.utf8.count
            case 13 where HTTPHeaders.namesEqual(field.name, "surrogate-key"): tagBytes += field.value.utf8.count
            case 3 where HTTPHeaders.namesEqual(field.name, "age"): age = age ?? field.value
            case 4 where HTTPHeaders.namesEqual(field.name, "date"): date = date ?? field.value
            case 4 where HTTPHeaders.namesEqual(field.name, "etag"): etag = etag ?? field.value
            case 7 where HTTPHeaders.namesEqual(field.name, "expires"): expires = expires ?? field.value
            case 13 where HTTPHeaders.namesEqual(field.name, "cache-control"): cacheControlValues.append(field.value)
            case 13 where HTTPHeaders.namesEqual(field.name, "last-modified"): lastModified = lastModified ?? field.value
            case 15 where HTTPHeaders.namesEqual(field.name, CacheOverrides.noteField): override = field.value
            case 17 where HTTPHeaders.namesEqual(field.name, TargetedCacheControl.fieldName): targetedValues.append(field.value)
            default: break
            }
        }
        // Within one tag's limit, no cap can apply: the tags are kept as sent, as almost always.
        self.headers = tagBytes <= CacheTags.tagLimit ? headers : CacheTags.capped(headers)
        let targeted = targetedValues.isEmpty ? nil : TargetedCacheControl.parse(targetedValues)
        var cacheControl = targeted ?? CacheControl(cacheControlValues)
        isPrivateDownstream = targeted == nil ? cacheControl.isPrivate : CacheControl(cacheControlValues).isPrivate
        // `override: [private]`: the origin's `private` goes on to clients, and only Larder ignores it.
        if targeted == nil, let override, CacheOverrides.notesPrivate(override) { cacheControl.isPrivate = false }
        self.cacheControl = cacheControl
        isTargeted = targeted != nil
        self.date = date.flatMap(HTTPDateParser.parse)
        // RFC 9111 §5.1: the first line's first member counts; an invalid Age is ignored; a huge one is capped.
        ageValue = age.flatMap { CacheControl.deltaSeconds($0.split(separator: ",", omittingEmptySubsequences: false)[0].trimmingOWS()) } ?? 0
        self.etag = etag
        self.lastModified = lastModified
        // A valid CDN-Cache-Control replaces Cache-Control and Expires alike (RFC 9213 §2.1).
        self.expires = targeted != nil ? nil : expires.map { HTTPDateParser.parse($0) ?? .distantPast }
    }

    public func header(_ name: String) -> String? {
        headers[name]
    }

    /// The same answer with its body in another form (a stream's, once it is whole).
    public func with(body: Body) -> CacheEntry {
        CacheEntry(status: status, headers: headers, body: body, requestTime: requestTime, responseTime: responseTime, interim: interim)
    }

    /// Whether the upstream gave any validator to revalidate with.
    public var hasValidator: Bool { etag != nil || lastModified != nil }

    /// The conditional request fields for revalidation, with the stored strings verbatim.
    public var conditionalHeaders: HTTPHeaders {
        var fields: HTTPHeaders = []
        if let etag { fields.append(("If-None-Match", etag)) }
        if let lastModified { fields.append(("If-Modified-Since", lastModified)) }
        return fields
    }

    /// The entry freshened by a 304 (RFC 9111 §4.3.4): each header field the 304 carries
    /// replaces the stored fields of that name; the body stays; the times become the 304's.
    public func freshened(by notModified: HTTPHeaders, requestTime: Date, responseTime: Date) -> CacheEntry {
        let replaced = Set(notModified.map { $0.name.lowercased() }).subtracting(Self.keptOn304)
        var merged = headers.filter { !replaced.contains($0.name.lowercased()) }
        merged += notModified.filter { replaced.contains($0.name.lowercased()) }
        return CacheEntry(status: status, headers: merged, body: body, requestTime: requestTime, responseTime: responseTime)
    }

    /// Fields a 304 must not overwrite: they describe the stored body, not the 304's empty one.
    private static let keptOn304: Set<String> = ["content-length", "content-encoding", "transfer-encoding", "content-range"]

    /// Bytes this entry really holds in memory: the object with its parsed fields, the field
    /// list and every string in it, and the body, each with its allocation overhead.
    public var cost: Int {
        var total = MemoryCost.allocation(Self.instanceBytes) + MemoryCost.array(bytes: headers.count * 32)
            + MemoryCost.array(bytes: body.memoryBytes)
        for field in headers { total += MemoryCost.string(field.name) + MemoryCost.string(field.value) }
        return total
    }

    /// The object's own size: its header and stored properties, `CacheControl` among them.
    private static let instanceBytes = 16 + 8 * 3 + 8 * 2 + MemoryLayout<CacheControl>.stride + 8
        + MemoryLayout<Date?>.stride * 2 + 8 + MemoryLayout<String?>.stride * 2
}

extension CacheEntry: Equatable {
    public static func == (a: CacheEntry, b: CacheEntry) -> Bool {
        a.status == b.status && a.body == b.body && a.requestTime == b.requestTime && a.responseTime == b.responseTime
            && a.headers.elementsEqual(b.headers) { $0.name == $1.name && $0.value == $1.value }
    }
}
