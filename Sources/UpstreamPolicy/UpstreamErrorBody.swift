import Foundation
import Bodies

/// The error body Open-Meteo (and many JSON APIs) send with a refusal:
/// `{"error":true,"reason":"Latitude must be in range of -90 to 90°. Given: 100.0."}`.
enum UpstreamErrorBody {
    /// The longest reason kept, in bytes: a log line is no place for a whole page.
    static let longestReason = 256

    private struct Body: Decodable {
        let reason: String
    }

    /// The reason, cut to `longestReason` bytes on a character boundary; nil when the body
    /// is not such an error. The log writer escapes it like any other text.
    static func reason(in body: [UInt8]) -> String? {
        guard body.first == UInt8(ascii: "{"), let reason = try? JSONDecoder().decode(Body.self, from: Data(body)).reason,
              !reason.isEmpty else { return nil }
        guard reason.utf8.count > longestReason else { return reason }
        var cut = ""
        for character in reason {
            guard cut.utf8.count + character.utf8.count <= longestReason - 3 else { break }
            cut.append(character)
        }
        return cut + "…"
    }
}
