import Foundation
import HTTPCore
import CacheVocabulary
import Bodies

/// One pass-through route: requests whose path is under `prefix` are forwarded to `origin`,
/// with the same path and query unless its `rules` rewrite them.
public struct RouteMount: Sendable, Equatable, CustomStringConvertible {
    /// A path starting with `/`; `/api` covers `/api` and `/api/…` but not `/apix`.
    public let prefix: String
    /// Scheme, host, port and optional base path, without a trailing slash.
    public let origin: String
    public var rules = ForwardingRules()
    public var caching = RouteCaching()

    public init?(_ text: some StringProtocol) {
        guard let equals = text.firstIndex(of: "=") else { return nil }
        self.init(prefix: text[..<equals].trimmingCharacters(in: .whitespaces),
                  origin: text[text.index(after: equals)...].trimmingCharacters(in: .whitespaces))
    }

    public init?(prefix: String, origin: String) {
        var origin = origin
        while origin.hasSuffix("/") { origin.removeLast() }
        guard prefix.hasPrefix("/"), !prefix.contains(where: { $0 == "?" || $0 == "#" || $0 == " " }),
              SettingValues.isHTTPURL(origin), !origin.contains(where: { $0 == "?" || $0 == "#" }) else { return nil }
        self.prefix = prefix
        self.origin = origin
    }

    /// `PREFIX=ORIGIN` items separated by commas (`LARDER_ROUTES`, or the `--route` flags joined).
    static func parseList(_ text: String) -> [RouteMount]? {
        var mounts: [RouteMount] = []
        for item in text.split(separator: ",") where !item.allSatisfy({ $0 == " " }) {
            guard let mount = RouteMount(item) else { return nil }
            mounts.append(mount)
        }
        return mounts.isEmpty ? nil : mounts
    }

    /// Why some of `mounts` could never match a request, one reason per such route (empty
    /// when every one can): a prefix that is a built-in path (the built-in route answers
    /// it), one given before, or one not in the normalised form requests are matched in.
    static func unreachable(_ mounts: [RouteMount], builtIn: [String]) -> [(index: Int, reason: String)] {
        var seen = Set<String>()
        var problems: [(index: Int, reason: String)] = []
        for (index, mount) in mounts.enumerated() {
            if builtIn.contains(mount.prefix) {
                problems.append((index, "\(mount): \(mount.prefix) is a built-in path, which its built-in route answers"))
            } else if !seen.insert(mount.prefix).inserted {
                problems.append((index, "\(mount): the prefix \(mount.prefix) is given twice; the second route would never be used"))
            } else if let normalized = TargetPath.normalized(mount.prefix), normalized != mount.prefix {
                problems.append((index, "\(mount): requests are matched once normalised, so write the prefix as \(normalized)"))
            } else if TargetPath.normalized(mount.prefix) == nil {
                problems.append((index, "\(mount): the prefix is not a path a request can have"))
            }
        }
        return problems
    }

    /// Whether a request path falls under this route.
    /// Compared as bytes, as paths are (RFC 3986 §6.2.1): by Characters, a combining mark
    /// after the prefix's last byte joined it into another Character, and the comparisons
    /// cost 10,400 instructions per pass-through miss (gate path pass-through-miss).
    public func covers(_ path: Substring) -> Bool {
        var path = path, prefix = prefix
        return prefix.withUTF8 { prefix in
            path.withUTF8 { path in
                guard path.count >= prefix.count, prefix.isEmpty || memcmp(path.baseAddress!, prefix.baseAddress!, prefix.count) == 0 else {
                    return false
                }
                return prefix.last == UInt8(ascii: "/") || path.count == prefix.count || path[prefix.count] == UInt8(ascii: "/")
            }
        }
    }

    /// Routes' prefixes as bytes, to ask whether any route covers a path without trying each
    /// route (an aggregate part against every route was parts × routes `covers` calls): the
    /// prefixes `covers` accepts are the path itself and its leading parts before and up to
    /// each `/`, looked up as bytes, as `covers` compares them.
    struct Prefixes {
        private let prefixes: Set<[UInt8]>

        init(_ mounts: [RouteMount]) { prefixes = Set(mounts.map { Array($0.prefix.utf8) }) }

        /// Whether any of the routes covers `path`, as `mounts.contains { $0.covers(path) }` says.
        func coverAny(_ path: String) -> Bool {
            let bytes = Array(path.utf8)
            if prefixes.contains(bytes) { return true }
            for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: "/") {
                if index > 0, prefixes.contains(Array(bytes[..<index])) { return true }
                if prefixes.contains(Array(bytes[...index])) { return true }
            }
            return false
        }
    }

    /// As printed: the origin with any password redacted, and the rules that differ from the
    /// defaults (fields set by name only: their values may be secrets).
    public var description: String {
        var notes: [String] = []
        switch rules.prefixReplacement {
        case nil: break
        case "": notes.append("strip-prefix")
        case let replacement?: notes.append("replace-prefix \(replacement)")
        }
        if !rules.setFields.isEmpty { notes.append("set-fields " + rules.setFields.map(\.name).joined(separator: " ")) }
        if !rules.removeFields.isEmpty { notes.append("remove-fields " + rules.removeFields.joined(separator: " ")) }
        if !rules.via { notes.append("no via") }
        if rules.forwardedFor { notes.append("x-forwarded-for") }
        if let limit = rules.maxRequestBody { notes.append("max-request-body \(limit)") }
        for (status, lifetime) in caching.lifetimes.sorted(by: { $0.key < $1.key }) { notes.append("lifetime \(status) \(lifetime.seconds)s") }
        if caching.staleWhileRevalidate > .zero { notes.append("stale-while-revalidate \(caching.staleWhileRevalidate.seconds)s") }
        if caching.staleIfError > .zero { notes.append("stale-if-error \(caching.staleIfError.seconds)s") }
        if !caching.ignoredQuery.isEmpty { notes.append("key ignores " + caching.ignoredQuery.joined(separator: " ")) }
        if caching.sortsQuery { notes.append("key sorts the query") }
        if let timeout = caching.timeout { notes.append("upstream-timeout \(timeout.seconds)s") }
        if let limit = caching.maxObjectSize { notes.append("max-object-size \(limit)") }
        if let concurrency = caching.concurrency { notes.append("upstream-concurrency \(concurrency)") }
        if !caching.overrides.isEmpty { notes.append("override " + caching.overrides.description) }
        if caching.clientRefresh != .ignore { notes.append("client-refresh \(caching.clientRefresh)") }
        return prefix + "=" + RedactedURL.text(origin) + (notes.isEmpty ? "" : " (" + notes.joined(separator: ", ") + ")")
    }
}
