import HTTPCore
import Bodies

/// A body a route rendered from an entry, kept in the entry's disk file beside it so that
/// reading the entry back does not render it again. `tag` names how the body was made (the
/// route's format and its version): a kept body under any other tag is ignored and made again.
public struct Rendition: Sendable, Equatable {
    public let tag: String
    public let body: [UInt8]

    public init(tag: String, body: [UInt8]) {
        self.tag = tag
        self.body = body
    }
}

/// How a route whose rendering is costly (decoding an upstream's JSON) serves an entry read
/// back from disk with the body it rendered before, instead of rendering it again: the
/// render hook is then `respond(entry, body(entry), nil)`, and only `respond` runs on a disk
/// hit, given the ETag kept with the body so that it does not hash the body again either.
public struct RenditionReuse: Sendable {
    /// Names what the route renders: its format and that format's version, changed whenever
    /// the same entry would render to other bytes.
    public let tag: String
    /// The response for an entry and the body rendered from it (now or before), with the
    /// body's ETag when it was kept beside it (nil: make it from the body).
    public let respond: @Sendable (CacheEntry, _ body: [UInt8], _ etag: String?) -> RenderedResponse
    /// The tag a kept body is written under: the route's, marked with the layout below, so a
    /// body kept in the layout before it (the body alone) is rendered again, never misread.
    let keptTag: String

    public init(tag: String, respond: @escaping @Sendable (CacheEntry, _ body: [UInt8], _ etag: String?) -> RenderedResponse) {
        self.tag = tag
        self.respond = respond
        keptTag = tag + "; etag, LF, body"
    }

    /// What to keep on disk beside an entry whose response is `rendered`: its ETag (empty
    /// when it has none), LF, and its body.
    func rendition(of rendered: RenderedResponse) -> Rendition {
        // One allocation: this runs on the loop for every miss it stores.
        let etag = (rendered.etag ?? "").utf8
        var kept: [UInt8] = []
        // A route renders in memory; only a relayed answer's body is ever a file, and it is never kept.
        let body = rendered.body.inMemory ?? []
        kept.reserveCapacity(etag.count + 1 + body.count)
        kept += etag
        kept.append(0x0A)
        kept += body
        return Rendition(tag: keptTag, body: kept)
    }

    /// The response from a kept body, when it was made the way the route makes it now.
    func response(_ entry: CacheEntry, kept: Rendition?) -> RenderedResponse? {
        guard let kept, kept.tag == keptTag, let end = kept.body.firstIndex(of: 0x0A) else { return nil }
        // Bytes from a file become a header field: only what a field value may hold.
        let etag = kept.body[..<end]
        guard FieldSyntax.isValue(etag) else { return nil }
        return respond(entry, Array(kept.body[(end + 1)...]), etag.isEmpty ? nil : String(decoding: etag, as: UTF8.self))
    }
}
