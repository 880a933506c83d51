import Foundation
import HTTPCore

/// The value files (`Name: @/path`) one configuration names, each path read once, 1 MiB
/// of them at most together, and none after one is refused: a refusal can cost a read of
/// 1 MiB or a wait of 5 s (`BoundedFile`), and a file of 1 MiB can name such a file, or one
/// file spelled many ways, in a hundred thousand items or routes. A secret that many routes
/// share is read, checked and held once.
struct ValueFiles: Sendable {
    /// What a value file gave.
    enum Outcome: Sendable {
        /// Its text without the newline it usually ends with: a field value.
        case value(String)
        /// Empty, or holding a control character (CR, LF, NUL).
        case notAValue
        /// Why it was not read whole (after the file's path in a problem).
        case refused(String)
    }

    /// The most bytes the value files of one configuration hold together.
    static let byteBudget = 1 << 20

    private var outcomes: [String: Outcome] = [:]
    private var bytes = 0
    /// Whether a value file was refused: later ones are not read (their items' words still are).
    private(set) var refused = false

    /// What the file at `path` gives, or nil when it is not read because one was refused.
    mutating func read(_ path: String) -> Outcome? {
        if let outcome = outcomes[path] { return outcome }
        guard !refused else { return nil }
        switch BoundedFile.read(path) {
        case .success(let data):
            bytes += data.count
            guard bytes <= Self.byteBudget else {
                refused = true
                return .refused("would take the configuration's value files past 1 MiB (1,048,576 bytes) together")
            }
            let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .newlines).trimmingOWS().description
            let outcome: Outcome = CredentialHeaders.isValue(text) ? .value(text) : .notAValue
            outcomes[path] = outcome
            return outcome
        case .failure(let refusal):
            refused = true
            return .refused(refusal.reason)
        }
    }
}
