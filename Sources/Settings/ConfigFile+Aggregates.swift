import Foundation
import HTTPCore
import Bodies
import Yams

/// The `aggregates` of a configuration file, keyed by path, each with its parts:
///
/// ```yaml
/// aggregates:
///   /dashboard:
///     deadline: 800ms          # default: the parts' longest upstream timeout + 1 s
///     merge: false             # true: the parts' members at the top level
///     parts:
///       weather: /weather?lat={lat}&lon={lon}
///       rates:
///         target: /rates/latest?base={currency}
///         required: false      # default true
///         pointer: /rates      # an RFC 6901 JSON pointer
///         fields: [EUR, USD]   # the members kept
/// ```
extension ConfigFile {
    /// One aggregate as written, with where its parts are, so what they name is checked with
    /// the line it was written on.
    struct Aggregate: Sendable {
        let declaration: AggregateDeclaration
        let line: Int
        let partLines: [String: Int]
    }

    static func aggregates(_ node: Node, path: String, lines: inout [String: Int], problems: inout [String]) -> [Aggregate] {
        guard case .mapping(let entries) = node else {
            problems.append("\(path):\(node.mark?.line ?? 1): aggregates: must be a mapping of paths to aggregates (/dashboard: {parts: …})")
            return []
        }
        var aggregates: [Aggregate] = []
        for (pathNode, body) in entries {
            let line = pathNode.mark?.line ?? 1
            let name = pathNode.string ?? ""
            let key = "aggregates.\(name)"
            lines[key] = line
            var reader = ValueReader(path: path, line: line, key: key)
            defer { problems += reader.problems }
            guard case .mapping(let settings) = body else {
                reader.problem("must be a mapping (parts: …)")
                continue
            }
            var declaration = AggregateDeclaration(path: name, parts: [])
            var partLines: [String: Int] = [:]
            for (settingNode, value) in settings {
                let settingLine = settingNode.mark?.line ?? line
                let setting = settingNode.string ?? ""
                var field = ValueReader(path: path, line: settingLine, key: "\(key).\(setting)")
                defer { problems += field.problems }
                switch setting {
                case "deadline":
                    if let deadline = field.duration(value.string) {
                        if deadline > .zero { declaration.deadline = deadline } else { field.problem("must be above zero") }
                    }
                case "merge":
                    if let merge = field.flag(value) { declaration.merge = merge }
                case "parts":
                    guard case .mapping(let parts) = value, !parts.isEmpty else {
                        field.problem("must map part names to targets (weather: /weather?lat={lat}&lon={lon})")
                        continue
                    }
                    for (partNode, part) in parts {
                        let partLine = partNode.mark?.line ?? settingLine
                        let partName = partNode.string ?? ""
                        var reader = ValueReader(path: path, line: partLine, key: "\(key).parts.\(partName)")
                        defer { problems += reader.problems }
                        guard AggregateDeclaration.isPartName(partName) else {
                            reader.problem("a part's name is a lower-case letter, then lower-case letters, digits, _ or - (64 at most)")
                            continue
                        }
                        if let made = Self.part(partName, part, &reader) {
                            declaration.parts.append(made)
                            partLines[partName] = partLine
                        }
                    }
                default:
                    field.problem("not an aggregate setting Larder knows (parts, deadline, merge)")
                }
            }
            if declaration.parts.isEmpty, !settings.contains(where: { $0.key.string == "parts" }) { reader.problem("needs parts") }
            aggregates.append(Aggregate(declaration: declaration, line: line, partLines: partLines))
        }
        return aggregates
    }

    /// A part written as its target alone, or as a mapping with `target` and its options; a
    /// problem with an option is at the option's line, with an item of `fields` at the item's.
    /// Every option is checked, whatever is wrong with the others.
    private static func part(_ name: String, _ node: Node, _ reader: inout ValueReader) -> AggregateDeclaration.Part? {
        func target(_ text: String?, line: Int? = nil) -> PartTarget? {
            if let target = text.flatMap(PartTarget.init) { return target }
            reader.problem("the target must be a path of this Larder with {name} placeholders in its query only, got '\(QuotedText.of(text ?? ""))'",
                           line: line)
            return nil
        }
        if node.scalar != nil { return target(node.string).map { AggregateDeclaration.Part(name: name, target: $0) } }
        guard case .mapping(let options) = node else {
            reader.problem("must be a target (/weather?lat={lat}) or a mapping (target: …, required: …)")
            return nil
        }
        guard let targetNode = options.first(where: { $0.key.string == "target" })?.value else {
            reader.problem("needs a target")
            return nil
        }
        let made = target(targetNode.string, line: targetNode.mark?.line)
        var required = true
        var pointer: String?
        var fields: [ListItem]?
        let problemsBefore = reader.problems.count
        for (optionNode, value) in options {
            var option = ValueReader(path: reader.path, line: optionNode.mark?.line ?? reader.line, key: reader.key)
            defer { reader.take(option) }
            switch optionNode.string ?? "" {
            case "target":
                break
            case "required":
                required = option.flag(value, "required ") ?? required
            case "pointer":
                if let text = value.string, AggregateDeclaration.isJSONPointer(text) {
                    pointer = text
                } else {
                    option.problem("pointer must be an RFC 6901 JSON pointer (/rates, or empty for the whole answer)")
                }
            case "fields":
                fields = option.items(value, "fields must be a list of member names")
            case let other:
                option.problem("'\(QuotedText.of(other))' is not a part setting Larder knows (target, required, pointer, fields)")
            }
        }
        // A member is matched by its whole name: `rates.USD` would select nothing, so each such
        // is refused at its line, with the pointer and member that select it.
        for nested in fields ?? [] {
            guard let dot = nested.text.lastIndex(of: ".") else { continue }
            let object = (pointer ?? "") + "/" + nested.text[..<dot].replacingOccurrences(of: ".", with: "/")
            reader.problem("fields name members of the object kept: '\(QuotedText.of(nested.text))' would select nothing; "
                           + "point at its object and name the member (pointer: \(QuotedText.of(object)), "
                           + "fields: [\(QuotedText.of(nested.text[nested.text.index(after: dot)...]))])", line: nested.line)
        }
        guard let made, reader.problems.count == problemsBefore else { return nil }
        var part = AggregateDeclaration.Part(name: name, target: made)
        part.required = required
        part.pointer = pointer
        part.fields = fields?.map(\.text)
        return part
    }

    /// The aggregates, each problem with its line: a path that is not one a request can
    /// have or that another route answers, a part whose target no route of this Larder serves.
    /// `served` are the paths the settings answer without aggregates, `mounts` the pass-through routes.
    func aggregates(served: [String], mounts: [RouteMount], problems: inout [String]) -> [AggregateDeclaration] {
        let paths = Set(aggregates.map(\.declaration.path) + (served.contains("/overview") ? ["/overview"] : []))
        let prefixes = RouteMount.Prefixes(mounts)
        var declared: [AggregateDeclaration] = []
        for aggregate in aggregates {
            let path = aggregate.declaration.path
            let place = "\(self.path):\(aggregate.line): \(QuotedText.of("aggregates.\(path)"))"
            guard path.hasPrefix("/"), !path.contains("?"), TargetPath.normalized(path) == path else {
                problems.append("\(place): must be a path in normalised form, starting with / and without a query")
                continue
            }
            if path != "/overview", served.contains(path) {
                problems.append("\(place): \(path) is answered by a built-in route")
                continue
            }
            var good = true
            for part in aggregate.declaration.parts {
                let partPlace = "\(self.path):\(aggregate.partLines[part.name] ?? aggregate.line): "
                    + QuotedText.of("aggregates.\(path).parts.\(part.name)")
                let target = part.target.path
                if paths.contains(target) {
                    problems.append("\(partPlace): \(target) is an aggregate; a part names a built-in or pass-through route")
                    good = false
                } else if TargetPath.normalized(target) != target {
                    problems.append("\(partPlace): write the target's path in normalised form (\(TargetPath.normalized(target) ?? "none"))")
                    good = false
                } else if !(["/weather", "/balance"].contains(target) && served.contains(target))
                            && !prefixes.coverAny(target) {
                    problems.append("\(partPlace): no route of this Larder serves \(target)")
                    good = false
                }
            }
            if good { declared.append(aggregate.declaration) }
        }
        return declared
    }
}
