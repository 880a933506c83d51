import Yams

/// A key given twice in one mapping. Yams refuses the whole file at the first such key,
/// pointing at the key's first place; Larder reports each one given again at its own line,
/// with every other problem of the file. So before the file is read, each key given again is
/// renamed (`renamedMark` put before it, a character no setting's name has) and composed
/// once more; its problem is kept, and the renamed key is left out of the file as read.
extension ConfigFile {
    /// Starts a key given again; a Unicode private-use character, so YAML takes it as text.
    static let renamedMark: Character = "\u{E000}"

    /// The most keys given again that are looked for: each costs one more composition of the file.
    static let duplicatesLooked = 50

    /// The file's root, with each key given again renamed, and a problem for each.
    static func composeKeepingDuplicates(_ text: String, path: String) throws(ConfigurationError) -> (root: Node?, problems: [String]) {
        var text = text
        var problems: [String] = []
        while true {
            do {
                return (try Yams.compose(yaml: text).map(withoutRenamed), problems)
            } catch YamlError.duplicatedKeysInMapping(let duplicates, let context) {
                let key = duplicates.sorted().first ?? ""
                guard problems.count < duplicatesLooked, let again = renameNext(key, after: context.mark, as: problems.count, in: &text) else {
                    // A key given again where its line cannot be found (a flow mapping `{a: 1, a: 2}`):
                    // its first place, and nothing more of the file.
                    throw ConfigurationError(problems: problems + ["\(path):\(context.mark.line): \(QuotedText.of(key)): given more than once in its mapping"])
                }
                problems.append("\(path):\(again): \(QuotedText.of(key)): given again (first on line \(context.mark.line)); a key is given once in its mapping")
            } catch {
                throw ConfigurationError("\(path):\(Self.line(of: error)): the file is not valid YAML or JSON: \(Self.problem(of: error))")
            }
        }
    }

    /// Renames the next key `key` of the block mapping whose key at `first` (1-based line and
    /// column) is the first: a later line with `key:` at the same column, before any line
    /// that is indented less. The `number`th key renamed takes it after the mark, so no two
    /// renamed keys are the same. Returns its line, or nil when there is none.
    private static func renameNext(_ key: String, after first: Mark, as number: Int, in text: inout String) -> Int? {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { Array($0.unicodeScalars) }
        let column = first.column - 1
        guard first.line >= 1, first.line <= lines.count else { return nil }
        let names = [key, "\"\(key)\"", "'\(key)'"].map { Array($0.unicodeScalars) }
        for index in first.line..<lines.count {
            let line = lines[index]
            let indent = line.prefix { $0 == " " }.count
            if indent == line.count || line[indent] == "#" { continue }
            if indent < column { return nil }
            guard indent == column else { continue }
            let rest = Array(line[indent...])
            guard let name = names.first(where: { name in
                rest.starts(with: name) && rest.dropFirst(name.count).drop { $0 == " " }.first == ":"
            }) else { continue }
            // Inside the quotes of a quoted key, before a plain one.
            let at = indent + (name.first == "\"" || name.first == "'" ? 1 : 0)
            lines[index].insert(contentsOf: "\(renamedMark)\(number)-".unicodeScalars, at: at)
            var joined = String.UnicodeScalarView()
            for (number, line) in lines.enumerated() {
                if number > 0 { joined.append("\n") }
                joined.append(contentsOf: line)
            }
            text = String(joined)
            return index + 1
        }
        return nil
    }

    /// `node` without the keys renamed, in every mapping it holds.
    private static func withoutRenamed(_ node: Node) -> Node {
        switch node {
        case .mapping(let mapping):
            let pairs = mapping.compactMap { pair -> (Node, Node)? in
                pair.key.string?.first == renamedMark ? nil : (pair.key, withoutRenamed(pair.value))
            }
            return .mapping(Node.Mapping(pairs, mapping.tag, mapping.style, mapping.mark))
        case .sequence(let sequence):
            return .sequence(Node.Sequence(sequence.map(withoutRenamed), sequence.tag, sequence.style, sequence.mark))
        default:
            return node
        }
    }
}
