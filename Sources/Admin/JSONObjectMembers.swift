import Foundation

/// The member names of a JSON object, in order and with repeats, which Foundation's decoders
/// do not show: both take `{"all":true,"all":false}` as one member (`JSONDecoder` keeping the
/// first value, `JSONSerialization` the last). Admin bodies are refused when a name repeats.
/// Only names are read here; `JSONDecoder` checks the body as JSON and reads the values.
enum JSONObjectMembers {
    /// The top-level member names of `body`, nil when it does not scan as one JSON object.
    static func names(in body: [UInt8]) -> [String]? {
        var position = 0
        func skipSpace() { while position < body.count, [0x20, 0x09, 0x0A, 0x0D].contains(body[position]) { position += 1 } }
        func next(_ byte: UInt8) -> Bool {
            skipSpace()
            guard position < body.count, body[position] == byte else { return false }
            position += 1
            return true
        }
        /// Moves past a string that starts at `position`; returns its bytes, quotes included.
        func string() -> ArraySlice<UInt8>? {
            let start = position
            guard position < body.count, body[position] == 0x22 else { return nil }
            position += 1
            while position < body.count {
                switch body[position] {
                case 0x5C: position += 2  // an escape and what it escapes
                case 0x22:
                    position += 1
                    return body[start..<position]
                default: position += 1
                }
            }
            return nil
        }
        /// Moves past one value: a string, or anything up to the `,` or closing bracket that
        /// ends it at this depth (nested strings skipped whole).
        func value() -> Bool {
            skipSpace()
            var depth = 0
            while position < body.count {
                switch body[position] {
                case 0x22: guard string() != nil else { return false }
                case 0x7B, 0x5B: depth += 1; position += 1
                case 0x7D, 0x5D:
                    if depth == 0 { return true }
                    depth -= 1
                    position += 1
                case 0x2C where depth == 0: return true
                default: position += 1
                }
            }
            return depth == 0
        }
        guard next(0x7B) else { return nil }
        var names: [String] = []
        if next(0x7D) { return names }
        repeat {
            skipSpace()
            guard let quoted = string(), let name = try? JSONDecoder().decode(String.self, from: Data(quoted)), next(0x3A), value() else {
                return nil
            }
            names.append(name)
        } while next(0x2C)
        return next(0x7D) ? names : nil
    }
}
