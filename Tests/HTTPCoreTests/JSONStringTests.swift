import Foundation
import HTTPCore
import Testing

/// The one JSON string escape writes the same bytes into an array (problem documents, the
/// weather body) and into a log line's buffer, and what it writes reads back as the text.
@Suite struct JSONStringTests {
    /// Every ASCII character alone, between text, and runs long enough to cross words.
    static let texts: [String] = (0..<0x80).flatMap { code -> [String] in
        let c = String(UnicodeScalar(UInt8(code)))
        return [c, "ab" + c + "cdefghij" + c, String(repeating: "x", count: code % 17) + c + "°C 😀"]
    } + ["", "plain text with no escapes at all, longer than a word", "\"\\\n\r\t\u{1}\u{1F}\u{7F}"]

    func viaByteBuffer(_ text: String) -> [UInt8] {
        var buffer = ByteBuffer(capacity: 16)
        var text = text
        buffer.append(0x22)
        text.withUTF8 { JSONString.escape($0, into: &buffer) }
        buffer.append(0x22)
        return buffer.array
    }

    @Test(arguments: texts) func bothSinksAgreeAndReadBack(_ text: String) throws {
        var array: [UInt8] = []
        JSONString.append(text, to: &array)
        #expect(array == viaByteBuffer(text))
        #expect(JSONString.quote(text) == String(decoding: array, as: UTF8.self))
        #expect(try JSONDecoder().decode(String.self, from: Data(array)) == text)
        let decoded = try JSONSerialization.jsonObject(with: Data(array), options: .fragmentsAllowed) as? String
        #expect(decoded == text)
    }

    @Test func controlsUseTheShortFormsWhereJSONHasThem() {
        #expect(JSONString.quote("a\"b\\c\nd\re\tf\u{0}g\u{1B}") == #""a\"b\\c\nd\re\tf\u0000g\u001b""#)
    }
}
