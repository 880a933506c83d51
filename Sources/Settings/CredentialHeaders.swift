import Foundation
public import HTTPCore

/// Header fields a built-in route sends to its upstream on every request (`--weather-header`,
/// `--balance-header`): credentials such as `Authorization: Bearer …` or an API key. A value
/// written `@/path` is read from that file (a secret mounted as a file), once at start.
///
/// The values are secrets: they go to the upstream and nowhere else. No error, log line,
/// metric or summary shows them; `redacted` names the fields only.
public enum CredentialHeaders {
    /// Why an item cannot be used, worded without its value.
    struct Problem: Error {
        let reason: String
    }

    /// Items, each of which may hold several lines (the environment's form, a file's block
    /// scalar), each line a field: the fields, and every problem with the index of its item.
    /// `files` reads the value files, each once, and none after one is refused (their items'
    /// words are still checked).
    static func read(_ items: [String], files: inout ValueFiles) -> (fields: HTTPHeaders, problems: [(index: Int, problem: Problem)]) {
        var fields = HTTPHeaders()
        var problems: [(index: Int, problem: Problem)] = []
        for (index, item) in items.enumerated() {
            let lines = item.split(whereSeparator: \.isNewline).filter { !$0.allSatisfy { $0 == " " || $0 == "\t" } }
            let indent = lines.first.map(Self.indent) ?? 0
            for line in lines {
                // A line indented more than its item's first continues the one before (a
                // value wrapped in a block): taken as a field, its words would be a name
                // shown in the settings line, and perhaps part of a secret.
                if Self.indent(line) > indent {
                    problems.append((index, Problem(reason: "a line is indented more than the item's first, as a value continued from the line before; write each field on one line")))
                    continue
                }
                switch parse(line, files: &files) {
                case .success(let field?): fields.add(field.name, field.value)
                case .success(nil): break
                case .failure(let problem): problems.append((index, problem))
                }
            }
        }
        return (fields, problems)
    }

    /// `Name: value`, or `Name: @/path` for a value kept in a file; nil for a value file
    /// `files` leaves unread.
    private static func parse(_ item: Substring, files: inout ValueFiles) -> Result<(name: String, value: String)?, Problem> {
        guard let colon = item.firstIndex(of: ":") else { return .failure(Problem(reason: "an item has no ':' (write Name: value)")) }
        let name = String(item[..<colon].trimmingOWS())
        guard FieldSyntax.isToken(name.utf8) else { return .failure(Problem(reason: "'\(QuotedText.of(name))' is not a field name")) }
        let value = String(item[item.index(after: colon)...].trimmingOWS())
        let notAValue = Problem(reason: "the value of \(name) is empty or holds a control character (CR, LF, NUL)")
        guard value.hasPrefix("@") else {
            return isValue(value) ? .success((name, value)) : .failure(notAValue)
        }
        let path = String(value.dropFirst())
        switch files.read(path) {
        case nil: return .success(nil)
        case .value(let text)?: return .success((name, text))
        case .notAValue?: return .failure(notAValue)
        case .refused(let reason)?:
            return .failure(Problem(reason: "the value file for \(name) (\(QuotedText.of(path))): \(reason); "
                                    + "later value files are not read until it is fixed"))
        }
    }

    /// Whether `text` can be a field's value here: not empty, and no control character.
    static func isValue(_ text: String) -> Bool { !text.isEmpty && FieldSyntax.isValue(text.utf8) }

    /// The spaces and tabs that start `line`.
    private static func indent(_ line: Substring) -> Int { line.prefix { $0 == " " || $0 == "\t" }.count }

    /// The field names with their values hidden, for start-up lines.
    public static func redacted(_ fields: HTTPHeaders) -> String {
        fields.map { "\($0.name): <redacted>" }.joined(separator: ", ")
    }
}
