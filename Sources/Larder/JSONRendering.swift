import Caching
import Crypto
import Foundation
import HTTPCore

extension RenderedResponse {
    /// Larder's own JSON as a 200 with its strong ETag, the upstream's `Date` and the given
    /// Cache-Control. The upstream's Date (or when its answer arrived, if it sent none) is
    /// kept because a cache forwards the origin's Date with Age beside it (RFC 9110 §6.6.1,
    /// RFC 9111 §4.2.3), never "now". Larder is the origin of this JSON and it has no
    /// modification date, so `If-Modified-Since` does not apply. `etag`, when given, is the
    /// body's own, kept from when it was first rendered.
    init(json body: [UInt8], date: Date, cacheControl: String, etag: String? = nil) {
        let etag = etag ?? Self.etag(of: body)
        let validators = RenderedFields([("Cache-Control", cacheControl), ("Date", HTTPDate.format(epochSeconds: Int(date.timeIntervalSince1970))),
                                         ("ETag", etag)])
        self.init(status: 200, body: body, fields: validators.appending("Content-Type", "application/json"),
                  notModifiedFields: validators, etag: etag, modified: nil)
    }

    /// A strong validator over the body: the first 16 bytes of its SHA-256, quoted.
    static func etag(of body: [UInt8]) -> String {
        SHA256.hash(data: body).withUnsafeBytes { "\"" + Hex.string(UnsafeRawBufferPointer(rebasing: $0.prefix(16))) + "\"" }
    }
}
