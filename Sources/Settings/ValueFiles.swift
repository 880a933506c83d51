import Foundation
import HTTPCore

/// The value files (`Name: @/path`) one configuration names, each path read once, and none
/// after one is refused: a refusal can cost a read of 1 MiB or a wait of 5 s
/// (`BoundedFile`), and a file of 1 MiB can name such a file in a hundred thousand items or
/// routes. A secret that many routes share is read once, and held once.
struct ValueFiles {
    private var values: [String: String] = [:]
    /// Whether a value file was refused: later ones are not read (their items' words still are).
    private(set) var refused = false

    /// The file's value (its text without the newline it usually ends with), why it cannot be
    /// had, or nil when it is not read because an earlier one was refused.
    mutating func value(at path: String) -> Result<String, BoundedFile.Refusal>? {
        if let value = values[path] { return .success(value) }
        guard !refused else { return nil }
        switch BoundedFile.read(path) {
        case .success(let bytes):
            let value = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .newlines).trimmingOWS().description
            values[path] = value
            return .success(value)
        case .failure(let refusal):
            refused = true
            return .failure(refusal)
        }
    }
}
