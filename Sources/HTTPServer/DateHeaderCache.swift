import HTTPCore

/// The `Date` header line, rendered once per second per event loop rather than per response.
struct DateHeaderCache {
    private var second = -1
    private(set) var line: [UInt8] = []

    mutating func current() -> [UInt8] {
        let now = System.wallSeconds()
        if now != second {
            second = now
            line = Array("Date: \(HTTPDate.format(epochSeconds: now))\r\n".utf8)
        }
        return line
    }
}
