import Yams

/// Reads the value of one key of a configuration file in the shape it must have, and keeps
/// each value of the wrong shape as a problem at the key's place (`FILE:LINE: key: …`), or at
/// a list item's own line.
struct ValueReader {
    let path: String
    let line: Int
    let key: String
    private(set) var problems: [String] = []

    init(path: String, line: Int, key: String) {
        self.path = path
        self.line = line
        self.key = key
    }

    /// `FILE:LINE: key`, at the key's line or at `line`.
    func place(line: Int? = nil) -> String { "\(path):\(line ?? self.line): \(QuotedText.of(key))" }

    mutating func problem(_ what: String, line: Int? = nil) { problems.append("\(place(line: line)): \(what)") }

    /// Keeps `other`'s problems after these: a reader of one entry of this key's mapping.
    mutating func take(_ other: ValueReader) { problems += other.problems }

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

    /// A sequence's items, each with its line; an item that is not text is a problem at its
    /// own line and left out, so the items after it are still checked. An alias (`*names`)
    /// carries the line of its anchor: one before this key, or before the item ahead of it,
    /// is reported at the key's line.
    mutating func items(_ node: Node, _ what: String = "must be a list of text values") -> [ListItem]? {
        guard case .sequence(let nodes) = node else {
            problem(what)
            return nil
        }
        var items: [ListItem] = []
        var previous = self.line
        for node in nodes {
            let marked = node.mark?.line ?? self.line
            let line = marked < previous ? self.line : marked
            previous = max(previous, marked)
            if let text = node.string { items.append(ListItem(text: text, line: line)) } else { problem("\(what); this item is not text", line: line) }
        }
        return items
    }
}

/// One item of a list in a configuration file, with its line, where a problem with it is reported.
struct ListItem: Sendable, Equatable {
    let text: String
    let line: Int
}
