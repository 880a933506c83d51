import HTTPCore

/// A metadata value the access log passes as `.stringConvertible`: `LogOutput` writes it
/// straight into its line, and any other handler reads its `description`. A String per
/// access line for these cost an allocation each on the hit path.
enum LogValue: CustomStringConvertible, Sendable {
    /// A count of thousandths, written as a decimal (`1234` → `1.234`, `2000` → `2.0`), as
    /// Swift prints a Double of that value.
    case thousandths(Int)
    /// A header field's octets, read in place (obs-text stands for ISO-8859-1, as in `FieldText`).
    case octets(ArraySlice<UInt8>)

    var description: String {
        switch self {
        case .thousandths(let count): String(Double(count) / 1000)
        case .octets(let octets): FieldText.decode(octets)
        }
    }
}
