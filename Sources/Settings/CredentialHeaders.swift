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

    /// Items separated by newlines (the environment's form; the flag is given once per item).
    static func parseList(_ text: String) -> Result<HTTPHeaders, Problem> {
        var fields = HTTPHeaders()
        for item in text.split(whereSeparator: \.isNewline) where !item.allSatisfy({ $0 == " " || $0 == "\t" }) {
            switch parse(item) {
            case .success(let field): fields.add(field.name, field.value)
            case .failure(let problem): return .failure(problem)
            }
        }
        return .success(fields)
    }

    /// `Name: value`, or `Name: @/path` for a value kept in a file.
    static func parse(_ item: Substring) -> Result<(name: String, value: String), Problem> {
        guard let colon = item.firstIndex(of: ":") else { return .failure(Problem(reason: "an item has no ':' (write Name: value)")) }
        let name = String(item[..<colon].trimmingOWS())
        guard FieldSyntax.isToken(name.utf8) else { return .failure(Problem(reason: "'\(name.prefix(64))' is not a field name")) }
        var value = String(item[item.index(after: colon)...].trimmingOWS())
        if value.hasPrefix("@") {
            let path = String(value.dropFirst())
            let data: [UInt8]
            switch BoundedFile.read(path) {
            case .success(let bytes): data = bytes
            case .failure(let refusal): return .failure(Problem(reason: "the value file for \(name) \(refusal.reason): \(path)"))
            }
            // A file usually ends with a newline; the value does not.
            value = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .newlines).trimmingOWS().description
        }
        guard !value.isEmpty, FieldSyntax.isValue(value.utf8) else {
            return .failure(Problem(reason: "the value of \(name) is empty or holds a control character (CR, LF, NUL)"))
        }
        return .success((name, value))
    }

    /// The field names with their values hidden, for start-up lines.
    public static func redacted(_ fields: HTTPHeaders) -> String {
        fields.map { "\($0.name): <redacted>" }.joined(separator: ", ")
    }
}
