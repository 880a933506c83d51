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
/// render hook is then `respond(entry, body(entry))`, and only `respond` runs on a disk hit.
public struct RenditionReuse: Sendable {
    /// Names what the route renders: its format and that format's version, changed whenever
    /// the same entry would render to other bytes.
    public let tag: String
    /// The response for an entry and the body rendered from it (now or before).
    public let respond: @Sendable (CacheEntry, _ body: [UInt8]) -> RenderedResponse

    public init(tag: String, respond: @escaping @Sendable (CacheEntry, _ body: [UInt8]) -> RenderedResponse) {
        self.tag = tag
        self.respond = respond
    }

    /// What to keep on disk beside an entry whose response is `rendered`.
    func rendition(of rendered: RenderedResponse) -> Rendition {
        Rendition(tag: tag, body: rendered.body)
    }

    /// The response from a kept body, when it was made the way the route makes it now.
    func response(_ entry: CacheEntry, kept: Rendition?) -> RenderedResponse? {
        guard let kept, kept.tag == tag else { return nil }
        return respond(entry, kept.body)
    }
}
