public import Caching
import Foundation
public import HTTPCore
public import HTTPServer
public import Logging
public import Settings

/// One of Larder's own API routes as data: where it is served, which resource a request
/// asks for and where the upstream is asked for it, how the upstream's answer becomes
/// Larder's JSON, who may keep that JSON, and the cache policy. `LarderService` turns each
/// route in `BuiltInRoute.all` into a `Cache` and a handler; adding a route is adding one here.
public struct BuiltInRoute: Sendable {
    /// Who may keep an answer: weather is for anyone, a balance only for its caller.
    enum Audience: Sendable, Equatable {
        /// `public, max-age=L, stale-while-revalidate=S, stale-if-error=E`
        case shared
        /// `private, max-age=L`
        case caller
    }

    /// The route's name: its key space in the cache, its upstream in metrics and
    /// readiness, and the part named in its errors (`weather`, `balance`).
    public let name: String
    public let path: String
    let audience: Audience
    public let policy: CachePolicy
    /// The resource a request asks for, or the parameter that is wrong; nil when the route
    /// has no upstream configured.
    public let locate: (@Sendable (HTTPRequest) -> Result<String, ParameterProblem>)?
    /// The upstream URL a resource is fetched from: made only on a fetch, never for a hit.
    public let upstreamURL: @Sendable (_ resource: String) -> String
    /// Fields sent to the upstream with every request: its credentials (`--weather-header`).
    public let credentials: HTTPHeaders
    /// Larder's JSON for an upstream answer; throws `UndecodableAnswer` when it does not decode.
    let decode: @Sendable (_ resource: String, CacheEntry) throws -> [UInt8]
    /// Names `decode`'s output format and its version: the JSON kept on disk beside an answer
    /// is served again only under the same tag. Change the version with the format.
    let format: String

    /// Cache-Control with the full lifetime (downstream subtracts Age itself). Only the
    /// lifetime changes from one answer to the next, so the text around it is made once, as
    /// bytes: every disk hit renders this again.
    struct CacheControlValue: Sendable {
        let head: [UInt8]
        let tail: [UInt8]
        /// False for a value with no lifetime in it (`no-store`).
        var hasLifetime = true

        func write(lifetime: Int, into out: inout ByteBuffer) {
            out.append(head)
            if hasLifetime { out.append(decimal: lifetime) }
            out.append(tail)
        }

        static let noStore = CacheControlValue(head: Array("no-store".utf8), tail: [], hasLifetime: false)
    }

    static func cacheControl(_ audience: Audience, settings: ServeSettings) -> CacheControlValue {
        switch audience {
        case .shared:
            let tail = ", stale-while-revalidate=\(Int(settings.staleWhileRevalidate.seconds)), "
                + "stale-if-error=\(Int(settings.staleIfError.seconds))"
            return CacheControlValue(head: Array("public, max-age=".utf8), tail: Array(tail.utf8))
        case .caller:
            return CacheControlValue(head: Array("private, max-age=".utf8), tail: [])
        }
    }

    /// The cache's render hook for this route: the decoded JSON with its fixed fields,
    /// rendered once per stored answer.
    /// An answer that does not decode is one `warning` line with the reason (callers only
    /// hear that it could not be read).
    public func render(settings: ServeSettings, logger: Logger) -> @Sendable (_ resource: String, CacheEntry) throws -> RenderedResponse {
        { [decode, name, respond = reuse(settings: settings).respond] resource, entry in
            do {
                return respond(entry, try decode(resource, entry), nil)
            } catch {
                logger.warning("upstream \(name): the answer for \(resource) could not be read: \(error)")
                throw error
            }
        }
    }

    /// The JSON decoded before, kept on disk under `format` with its ETag, and the fields that
    /// follow from the answer (its lifetime and `Date`) and the settings: a disk hit decodes
    /// and hashes nothing.
    public func reuse(settings: ServeSettings) -> RenditionReuse {
        RenditionReuse(tag: format) { [policy, cacheControl = Self.cacheControl(audience, settings: settings)] entry, json, etag in
            let lifetime = Freshness.wholeSeconds(Freshness.lifetime(of: entry, policy: policy))
            return RenderedResponse(json: json, date: entry.date ?? entry.responseTime, cacheControl: cacheControl, lifetime: lifetime, etag: etag)
        }
    }
}

extension BuiltInRoute {
    /// Every built-in route, in the order they are registered.
    static func all(_ settings: ServeSettings) -> [BuiltInRoute] {
        [weather(settings), balance(settings)]
    }

    public static func weather(_ settings: ServeSettings) -> BuiltInRoute {
        let base = settings.weatherURL
        let precision = settings.coordinatePrecision
        return BuiltInRoute(
            name: "weather", path: "/weather", audience: .shared,
            policy: CachePolicy(defaultLifetime: settings.weatherTTL.seconds, staleWhileRevalidate: settings.staleWhileRevalidate.seconds,
                                staleIfError: settings.staleIfError.seconds, storage: .decodedAnswers(storesPrivate: false),
                                refreshMinInterval: settings.refreshMinInterval.seconds),
            locate: { request in Place.parse(query: request.query, precision: precision).map(\.resource) },
            upstreamURL: { resource in OpenMeteoFormat.url(base: base, resource: resource) },
            credentials: settings.weatherHeaders,
            decode: { resource, entry in try OpenMeteoFormat.json(resource: resource, entry: entry) },
            format: "weather json \(OpenMeteoFormat.version)")
    }

    /// One balance per deployment: the resource is always the same, the upstream URL configured.
    public static func balance(_ settings: ServeSettings) -> BuiltInRoute {
        var locate: (@Sendable (HTTPRequest) -> Result<String, ParameterProblem>)?
        if settings.balanceURL != nil { locate = { _ in .success("balance") } }
        let url = settings.balanceURL ?? ""
        return BuiltInRoute(
            name: "balance", path: "/balance", audience: .caller,
            policy: CachePolicy(defaultLifetime: settings.balanceTTL.seconds, staleWhileRevalidate: settings.staleWhileRevalidate.seconds,
                                staleIfError: settings.staleIfError.seconds, storage: .decodedAnswers(storesPrivate: true),
                                refreshMinInterval: settings.refreshMinInterval.seconds),
            locate: locate,
            upstreamURL: { _ in url },
            credentials: settings.balanceHeaders,
            decode: { _, entry in try BalanceFormat.json(entry: entry) },
            format: "balance json \(BalanceFormat.version)")
    }
}
