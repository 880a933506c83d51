public import HTTPCore
import Foundation

/// The request fields a stored response was selected by (`Vary`, RFC 9110 §12.5.5), and the
/// part of a cache key they make: two requests share a stored response only when every
/// listed field has the same value in both (absent counts as a value of its own).
public struct Vary: Sendable, Equatable {
    /// Lower-cased field names, each once, sorted, so the order `Vary` lists them in does not matter.
    public let names: [String]
    /// `Vary: *` anywhere: no later request can match, so the response is not stored.
    public let isStar: Bool

    public init(_ fieldValues: [String]) {
        var names = Set<String>()
        var star = false
        for value in fieldValues {
            for member in value.listMembers() {
                let name = member.lowercased()
                if name == "*" { star = true } else { names.insert(name) }
            }
        }
        self.names = names.sorted()
        isStar = star
    }

    public init(of entry: CacheEntry) {
        self.init(entry.headers.filter { HTTPHeaders.namesEqual($0.name, "vary") }.map(\.value))
    }

    public var isEmpty: Bool { names.isEmpty && !isStar }

    /// The listed fields' values in a request, one line each: lines of a field joined with
    /// commas and the spaces around its members dropped, so `a, b` and `a,b` agree.
    public func selector(_ headers: HTTPHeaders) -> String {
        var selector = ""
        for name in names {
            let lines = headers.filter { HTTPHeaders.namesEqual($0.name, name) }.map(\.value)
            selector += name
            if lines.isEmpty {
                selector += "\u{1}\n"  // absent, which no sent value can equal
                continue
            }
            selector += ":"
            selector += lines.joined(separator: ",").split(separator: ",", omittingEmptySubsequences: false)
                .map { $0.trimmingOWS() }.joined(separator: ",")
            selector += "\n"
        }
        return selector
    }
}
