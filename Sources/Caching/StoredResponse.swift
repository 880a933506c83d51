public import Foundation
public import HTTPCore
import CacheVocabulary
public import Bodies

/// A response as the cache keeps and serves it: the entry the upstream gave (what the disk
/// stores), and what the route rendered from it once, when it was fetched or read back,
/// so a hit copies bytes instead of rendering them again.
public final class StoredResponse: Sendable {
    public let entry: CacheEntry
    public let rendered: RenderedResponse
    /// Bytes this response holds in memory: the entry, and what rendering added to it.
    let cost: Int

    public init(entry: CacheEntry, rendered: RenderedResponse) {
        self.entry = entry
        self.rendered = rendered
        let sharesBody = entry.body.sharesStorage(with: rendered.body)
        cost = MemoryCost.allocation(16 + 16 + MemoryLayout<RenderedResponse>.stride) + entry.cost
            + rendered.memoryCost(countingBody: !sharesBody)
    }
}

/// What a route sends for a stored response, rendered once: status, body, and the header
/// fields of a full answer and of a 304, each without `Age`, `Cache-Status` and
/// `Content-Length`, which are written per answer.
public struct RenderedResponse: Sendable {
    public let status: Int
    public let body: Body
    public let fields: RenderedFields
    /// What a 304 carries: the validators and caching fields, not the metadata of a body it lacks.
    public let notModifiedFields: RenderedFields
    /// The validator `If-None-Match` is compared with.
    public let etag: String?
    /// The date `If-Modified-Since` is compared with; nil when none applies.
    public let modified: Date?

    public init(status: Int, body: [UInt8], fields: RenderedFields, notModifiedFields: RenderedFields, etag: String?, modified: Date?) {
        self.init(status: status, body: .bytes(body), fields: fields, notModifiedFields: notModifiedFields, etag: etag, modified: modified)
    }

    public init(status: Int, body: Body, fields: RenderedFields, notModifiedFields: RenderedFields, etag: String?, modified: Date?) {
        self.status = status
        self.body = body
        self.fields = fields
        self.notModifiedFields = notModifiedFields
        self.etag = etag
        self.modified = modified
    }

    /// The same response with its body in another form (a stream's, once it is whole).
    public func with(body: Body) -> RenderedResponse {
        RenderedResponse(status: status, body: body, fields: fields, notModifiedFields: notModifiedFields, etag: etag, modified: modified)
    }

    /// The entry as it is, for a cache in front of an origin: every stored field but `Age`,
    /// `Content-Length` and the tag fields (`CacheTags.fields`); a 304 leaves out the fields that describe the body. Without
    /// `Last-Modified`, the stored `Date` stands in for `If-Modified-Since` (RFC 9111 §4.3.2).
    ///
    /// Each field set is rendered from the stored fields as they are (`RenderedFields(_:where:)`),
    /// on every miss of a pass-through route: 9,800 instructions of a small miss against 10,700
    /// filtering them into two field lists first and rendering each (gate path pass-through-miss).
    ///
    /// A 200 says `Accept-Ranges: bytes` in place of whatever the origin said: Larder answers
    /// ranges of it itself (RFC 9110 §14.3). The line is part of the fields rendered here,
    /// once per miss or disk read, so a memory hit copies it with the rest and does no more.
    public init(relaying entry: CacheEntry) {
        let fields = RenderedFields(entry.headers, where: Self.isRelayed, followedBy: entry.status == 200 ? Self.acceptsRanges : [])
        self.init(status: entry.status, body: entry.body, fields: fields,
                  notModifiedFields: RenderedFields(entry.headers) { Self.isRelayed($0) && !Self.describesBody($0) },
                  etag: entry.etag, modified: entry.lastModified.flatMap(HTTPDateParser.parse) ?? entry.date)
    }

    /// The fields of a part of the entry (a 206 made from it): as relayed, without any
    /// `Content-Range` it had, since the part states its own (RFC 9110 §14.4).
    public static func partialFields(of entry: CacheEntry) -> RenderedFields {
        RenderedFields(entry.headers, where: { isRelayed($0) && !HTTPHeaders.namesEqual($0, "content-range") }, followedBy: acceptsRanges)
    }

    private static let acceptsRanges = Array("Accept-Ranges: bytes\r\n".utf8)

    /// Whether a stored field goes to clients: `Age`, `Content-Length` and `Accept-Ranges` are
    /// Larder's own to send, and so is the framing, whatever a stored answer says (hop-by-hop
    /// fields are dropped); the tag fields are for caches, not clients.

    private static func isRelayed(_ name: String) -> Bool {
        !HTTPHeaders.namesEqual(name, "age") && !HTTPHeaders.namesEqual(name, "content-length")
            && !HTTPHeaders.namesEqual(name, "accept-ranges")
            && !HopByHop.contains(name) && !HTTPHeaders.name(name, isOneOf: CacheTags.fields)
            && !HTTPHeaders.namesEqual(name, CacheOverrides.noteField)
    }

    /// `Content-*` fields other than `Content-Location` describe a body.
    static func describesBody(_ name: String) -> Bool {
        // A name's first eight bytes are a String of their own without an allocation (up to 15 are kept inline).
        name.utf8.count >= 8 && HTTPHeaders.namesEqual(String(decoding: name.utf8.prefix(8), as: UTF8.self), "content-")
            && !HTTPHeaders.namesEqual(name, "content-location")
    }

    func memoryCost(countingBody: Bool) -> Int {
        (countingBody ? MemoryCost.array(bytes: body.memoryBytes) : 0) + MemoryCost.array(bytes: fields.bytes.count)
            + MemoryCost.array(bytes: notModifiedFields.bytes.count) + (etag.map(MemoryCost.string) ?? 0)
    }
}
