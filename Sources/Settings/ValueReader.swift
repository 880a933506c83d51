import Yams

/// Reads the value of one key of a configuration file in the shape it must have, and keeps
/// each value of the wrong shape as a problem at the key's place (`FILE:LINE: key: …`).
struct ValueReader {
    let place: String
    private(set) var problems: [String] = []

    init(place: String) { self.place = place }

    mutating func problem(_ what: String) { problems.append("\(place): \(what)") }

    /// `true` or `false`, in any case. `name` starts the problem (`sort-query `).
    mutating func flag(_ node: Node, _ name: String = "") -> Bool? {
        if let value = node.string.flatMap({ ["true": true, "false": false][$0.lowercased()] }) { return value }
        problem("\(name)must be true or false")
        return nil
    }

    mutating func duration(_ text: String?) -> Duration? {
        value(text, SettingValues.duration, "must be a duration (seconds, or with us, ms, s, m, h)")
    }

    /// The text read by `parse` (a `SettingValues` parser); `problem` when there is none.
    mutating func value<Value>(_ text: String?, _ parse: (String) -> Value?, _ problem: String) -> Value? {
        if let value = text.flatMap(parse) { return value }
        self.problem(problem)
        return nil
    }

    mutating func texts(_ node: Node, _ what: String = "must be a list of text values") -> [String]? {
        if case .sequence(let items) = node, items.allSatisfy({ $0.string != nil }) { return items.compactMap(\.string) }
        problem(what)
        return nil
    }
}
