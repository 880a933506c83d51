import Yams

/// A key given twice in one mapping. Yams refuses the whole file at the first mapping that
/// has one, pointing at a key's first place; Larder reports each key given again at its own
/// line, with every other problem of the file. So each key given again in that mapping is
/// renamed (`renamedMark` put before it, a character no setting's name has) and the file
/// composed once more, until no mapping has one; the renamed keys are left out of the file
/// as read.
extension ConfigFile {
    /// Starts a key given again; a Unicode private-use character, so YAML takes it as text.
    static let renamedMark: Character = "\u{E000}"

    /// The most mappings with keys given again that are looked at: each costs one more
    /// composition of the file (about a second for a file of 400 KB in a debug build).
    static let duplicateMappingsLooked = 10

    /// The file's root, with each key given again renamed, and a problem for each.
    static func composeKeepingDuplicates(_ text: String, path: String) throws(ConfigurationError) -> (root: Node?, problems: [String]) {
        var text = text
        var problems: [String] = []
        for _ in 0...duplicateMappingsLooked {
            do {
                return (try Yams.compose(yaml: text).map(withoutRenamed), problems)
            } catch YamlError.duplicatedKeysInMapping(let duplicates, let context) {
                let renamed = renameAgain(Set(duplicates), of: context.mark, numberedFrom: problems.count, in: &text)
                guard !renamed.isEmpty else {
                    // Keys given again where their lines cannot be found (a flow mapping
                    // `{a: 1, a: 2}`): the first one's place, and nothing more of the file.
                    let keys = duplicates.sorted().map { QuotedText.of($0) }.joined(separator: ", ")
                    throw ConfigurationError(problems: problems + ["\(path):\(context.mark.line): \(keys): given more than once in its mapping"])
                }
                problems += renamed.map { key, line, first in
                    "\(path):\(line): \(QuotedText.of(key)): given again (first on line \(first)); a key is given once in its mapping"
                }
            } catch {
                throw ConfigurationError("\(path):\(Self.line(of: error)): the file is not valid YAML or JSON: \(Self.problem(of: error))")
            }
        }
        throw ConfigurationError(problems: problems + ["\(path): more mappings than \(duplicateMappingsLooked) give a key twice; these are the first"])
    }

    /// Renames each later `key:` of `keys` in the block mapping that has a key at `mark`
    /// (1-based line and column): the lines with a key at that column, up to the first line
    /// indented less. Each renamed key takes its number after the mark, so no two are the
    /// same. Returns each renamed key with its line and its first one's.
    private static func renameAgain(_ keys: Set<String>, of mark: Mark, numberedFrom number: Int,
                                    in text: inout String) -> [(key: String, line: Int, first: Int)] {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { Array($0.unicodeScalars) }
        let column = mark.column - 1
        guard mark.line >= 1, mark.line <= lines.count else { return [] }
        /// The key at `column` of line `index`, when it has one.
        func key(at index: Int) -> String? {
            let line = lines[index]
            // Only spaces before it, or the dash of a sequence's item (`- key:`).
            guard line.count > column, line[..<column].allSatisfy({ $0 == " " || $0 == "-" }) else { return nil }
            var rest = line[column...]
            var quote: Unicode.Scalar?
            if let first = rest.first, first == "\"" || first == "'" {
                quote = first
                rest = rest.dropFirst()
            }
            let end = quote.map { quote in rest.firstIndex(of: quote) } ?? rest.firstIndex(of: ":")
            guard let end else { return nil }
            let after = rest[(quote == nil ? end : end + 1)...].drop { $0 == " " }
            guard after.first == ":" else { return nil }
            var name = String.UnicodeScalarView()
            name.append(contentsOf: rest[..<end])
            return String(name).trimmingSuffix(quote == nil)
        }
        func indent(_ index: Int) -> Int? {
            let line = lines[index]
            let indent = line.prefix { $0 == " " }.count
            return indent == line.count || line[indent] == "#" ? nil : indent
        }
        // The mapping's first line: back up over its keys and what they hold, up to a line
        // indented less (which still starts it when its key is at the column: `- key:`).
        var start = mark.line - 1
        while start > 0, (indent(start) ?? column) >= column {
            guard let above = indent(start - 1), above < column else {
                start -= 1
                continue
            }
            if key(at: start - 1) != nil { start -= 1 }
            break
        }
        var first: [String: Int] = [:]
        var renamed: [(key: String, line: Int, first: Int)] = []
        for index in start..<lines.count {
            guard let indent = indent(index) else { continue }
            if index > start, indent < column { break }
            guard index == start || indent == column, let name = key(at: index), keys.contains(name) else { continue }
            guard let firstLine = first[name] else {
                first[name] = index + 1
                continue
            }
            let quoted = lines[index][column] == "\"" || lines[index][column] == "'"
            lines[index].insert(contentsOf: "\(renamedMark)\(number + renamed.count)-".unicodeScalars, at: column + (quoted ? 1 : 0))
            renamed.append((name, index + 1, firstLine))
        }
        guard !renamed.isEmpty else { return [] }
        var joined = String.UnicodeScalarView()
        for (index, line) in lines.enumerated() {
            if index > 0 { joined.append("\n") }
            joined.append(contentsOf: line)
        }
        text = String(joined)
        return renamed
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

private extension String {
    /// A plain key as YAML reads it: without the spaces before its colon.
    func trimmingSuffix(_ plain: Bool) -> String {
        plain ? String(reversed().drop { $0 == " " }.reversed()) : self
    }
}
