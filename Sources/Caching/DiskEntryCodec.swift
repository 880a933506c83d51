import CLinux
import Foundation
import HTTPCore
import Bodies

/// The bytes of one disk entry (and of one shared-tier value):
///
///     magic "LRDR" | version u32 | key length u32 | metadata length u32 | body length u64 |
///     rendition length u32 | CRC-32C of (key, metadata, body, rendition) u32 |
///     key | metadata | body | rendition
///
/// metadata = status u32 | request time f64 | response time f64 | field count u32 |
/// per field: name length u32, name, value length u32, value, then any number of zero bytes
/// (padding, so that a body already in its file lies where the format puts it). rendition =
/// nothing, or tag length u32 | tag | rendered body. Integers little-endian.
///
/// Decoding checks every length against what is there and the checksum against the bytes,
/// so a flipped, truncated or empty file is rejected, never misread. The checksum finds
/// damage, not forgery (whoever can write the file can write any checksum), so it is
/// CRC-32C, as storage engines use, not a cryptographic hash: every read checks it.
/// Files of version 1 (a SHA-256 in place of the CRC, no rendition) are another format:
/// a read rejects them and the disk tier removes them when it opens.
enum DiskEntryCodec {
    static let magic: [UInt8] = Array("LRDR".utf8)
    static let version: UInt32 = 2
    static let headerSize = 4 + 4 + 4 + 4 + 8 + 4 + 4

    /// What a whole, unaltered file holds.
    struct Decoded {
        let key: String
        let entry: CacheEntry
        let rendition: Rendition?
    }

    static func encode(key: String, entry: CacheEntry, rendition: Rendition? = nil) -> [UInt8] {
        var kept: [UInt8] = []
        if let rendition {
            kept.reserveCapacity(4 + rendition.tag.utf8.count + rendition.body.count)
            append(UInt32(rendition.tag.utf8.count), to: &kept)
            kept += rendition.tag.utf8
            kept += rendition.body
        }
        // Only an entry in memory is encoded whole; one in a file is written around it (`head`).
        return frame(key: Array(key.utf8), meta: metadata(of: entry), body: entry.body.inMemory ?? [], rendition: kept)
    }

    /// Status, times and fields as the format stores them.
    static func metadata(of entry: CacheEntry) -> [UInt8] {
        var meta: [UInt8] = []
        meta.reserveCapacity(32 + entry.headers.count * 48)
        append(UInt32(clamping: entry.status), to: &meta)
        append(entry.requestTime.timeIntervalSince1970.bitPattern, to: &meta)
        append(entry.responseTime.timeIntervalSince1970.bitPattern, to: &meta)
        append(UInt32(entry.headers.count), to: &meta)
        for field in entry.headers {
            append(UInt32(field.name.utf8.count), to: &meta)
            meta += field.name.utf8
            append(UInt32(field.value.utf8.count), to: &meta)
            meta += field.value.utf8
        }
        return meta
    }

    /// How many bytes `encode` makes of these, without making them: a write waiting in line is
    /// charged this, and encoded only on the writer thread.
    static func encodedSize(key: String, entry: CacheEntry, rendition: Rendition? = nil) -> Int {
        var meta = 4 + 8 + 8 + 4
        for field in entry.headers { meta += 8 + field.name.utf8.count + field.value.utf8.count }
        let kept = rendition.map { 4 + $0.tag.utf8.count + $0.body.count } ?? 0
        return headerSize + key.utf8.count + meta + entry.body.count + kept
    }

    /// The file for these parts: header with lengths and the checksum over all of them, then
    /// the parts themselves.
    static func frame(key keyBytes: [UInt8], meta: [UInt8], body: [UInt8], rendition: [UInt8] = []) -> [UInt8] {
        var out = header(key: keyBytes, meta: meta, bodyLength: body.count, renditionLength: rendition.count,
                         capacity: headerSize + keyBytes.count + meta.count + body.count + rendition.count)
        out += keyBytes
        out += meta
        out += body
        out += rendition
        withUnsafeBytes(of: checksum(out[headerSize...]).littleEndian) { out.replaceSubrange(headerSize - 4..<headerSize, with: $0) }
        return out
    }

    /// The fixed header, its checksum 0 until the parts are in.
    static func header(key: [UInt8], meta: [UInt8], bodyLength: Int, renditionLength: Int, capacity: Int) -> [UInt8] {
        var out = magic
        out.reserveCapacity(capacity)
        append(version, to: &out)
        append(UInt32(key.count), to: &out)
        append(UInt32(meta.count), to: &out)
        append(UInt64(bodyLength), to: &out)
        append(UInt32(renditionLength), to: &out)
        append(UInt32(0), to: &out)
        return out
    }

    /// CRC-32C over everything after the header: the parts lie there in order, one run of bytes.
    private static func checksum(_ parts: ArraySlice<UInt8>) -> UInt32 {
        parts.withUnsafeBytes { larder_crc32c(0, $0.baseAddress, $0.count) }
    }

    /// The entry, if the bytes are a whole, unaltered entry for `key`; nil for anything else.
    ///
    /// Total over any input: every length is checked against the bytes actually there with
    /// overflow-free arithmetic, the checksum is verified before any metadata is decoded, and
    /// what the metadata says is checked too (a status code, times a `Date` can hold, field
    /// names that are tokens and values without CR, LF or NUL), so even bytes that carry a
    /// valid checksum cannot make Larder trap or send a malformed response.
    static func decode(_ bytes: [UInt8], key: String) -> CacheEntry? {
        guard let decoded = decodeKeyed(bytes), decoded.key == key else { return nil }
        return decoded.entry
    }

    /// Whether stored fields could have come from an origin through Larder: at most one
    /// `Content-Length`, of digits, and no field that frames a message or describes a
    /// connection (`Transfer-Encoding`, `Connection`, …), which Larder drops from every
    /// answer before storing it, nor a `Set-Cookie`, which it never stores. A checksum finds
    /// accidents, not intent: a file planted in the cache folder, or a value planted in
    /// Redis, is checked like an origin's answer.
    static func areServable(_ headers: HTTPHeaders) -> Bool {
        var lengths = 0
        for field in headers {
            if HopByHop.contains(field.name) || HTTPHeaders.namesEqual(field.name, "set-cookie") { return false }
            if HTTPHeaders.namesEqual(field.name, "content-length") {
                lengths += 1
                guard lengths == 1, !field.value.isEmpty, field.value.utf8.allSatisfy(FieldSyntax.isDigit) else { return false }
            }
        }
        return true
    }

    /// The key, entry and kept rendition, if the bytes are a whole, unaltered entry (see `decode`).
    static func decodeKeyed(_ bytes: [UInt8]) -> Decoded? {
        guard var reader = opened(bytes), let keyLength = reader.u32(), let metaLength = reader.u32(), let bodyLength = reader.u64(),
              let renditionLength = reader.u32(), let crc = reader.u32(),
              UInt64(bytes.count) == totalLength(key: keyLength, meta: metaLength, body: bodyLength, rendition: renditionLength),
              let keyBytes = reader.take(Int(keyLength)), let meta = reader.take(Int(metaLength)),
              let body = reader.take(Int(bodyLength)), let kept = reader.take(reader.remaining),
              checksum(bytes[headerSize...]) == crc,
              let meta = metadata(meta) else { return nil }
        var rendition: Rendition?
        if !kept.isEmpty {
            var parts = Reader(bytes: kept)
            guard let tagLength = parts.u32(), let tag = parts.take(Int(tagLength)) else { return nil }
            rendition = Rendition(tag: String(decoding: tag, as: UTF8.self), body: Array(parts.take(parts.remaining) ?? []))
        }
        return Decoded(key: String(decoding: keyBytes, as: UTF8.self),
                       entry: CacheEntry(status: meta.status, headers: meta.headers, body: Array(body), requestTime: meta.requestTime,
                                         responseTime: meta.responseTime),
                       rendition: rendition)
    }

    /// A reader past the magic and the version, when the bytes begin as this format's do.
    static func opened(_ bytes: [UInt8]) -> Reader? {
        var reader = Reader(bytes: bytes[...])
        guard reader.take(4)?.elementsEqual(magic) == true, reader.u32() == version else { return nil }
        return reader
    }

    /// Whether a file's first bytes say it is ours but of an older version: removed at start
    /// rather than counted damaged on its first read.
    static func isOlderVersion(_ header: [UInt8]) -> Bool {
        var reader = Reader(bytes: header[...])
        guard reader.take(4)?.elementsEqual(magic) == true, let stored = reader.u32() else { return false }
        return stored < version
    }

    /// How many bytes from the start of a file hold its key and metadata, read from the
    /// fixed header; nil when the header is not one of ours.
    static func headLength(_ header: [UInt8]) -> Int? {
        guard var reader = opened(header), let keyLength = reader.u32(), let metaLength = reader.u32() else { return nil }
        return headerSize + Int(keyLength) + Int(metaLength)
    }

    /// The key, status and fields from the start of a file (`headLength` bytes), without the
    /// body and so without the checksum: for the disk index's load, never for
    /// serving (a damaged file is still found out, and removed, when it is read).
    static func decodeHead(_ bytes: [UInt8]) -> (key: String, status: Int, headers: HTTPHeaders)? {
        guard var reader = opened(bytes), let keyLength = reader.u32(), let metaLength = reader.u32(), reader.u64() != nil,
              reader.take(8) != nil,  // the rendition's length and the checksum
              let keyBytes = reader.take(Int(keyLength)), let meta = reader.take(Int(metaLength)).flatMap(metadata) else { return nil }
        return (String(decoding: keyBytes, as: UTF8.self), meta.status, meta.headers)
    }

    /// Status, times and fields, each checked (see `decode`).
    static func metadata(_ meta: ArraySlice<UInt8>) -> (status: Int, requestTime: Date, responseTime: Date, headers: HTTPHeaders)? {
        var fields = Reader(bytes: meta)
        // A stored answer is a final, whole one (200-599; never a 206 or a 304, which Larder
        // never stores), or a variant index of ours.
        guard let status = fields.u32(), status == UInt32(VariantIndex.diskStatus) || (200...599).contains(status),
              status != 206, status != 304,
              let requestTime = fields.u64().flatMap(time), let responseTime = fields.u64().flatMap(time),
              let count = fields.u32(), count <= 10_000 else { return nil }
        var headers: HTTPHeaders = []
        headers.reserveCapacity(Int(count))
        for _ in 0..<count {
            guard let nameLength = fields.u32(), let nameBytes = fields.take(Int(nameLength)),
                  let name = nameBytes.withUnsafeBufferPointer(Self.fieldName),
                  let valueLength = fields.u32(), let value = fields.take(Int(valueLength)), FieldSyntax.isValue(value) else { return nil }
            headers.append((name, String(decoding: value, as: UTF8.self)))
        }
        guard fields.take(fields.remaining)?.allSatisfy({ $0 == 0 }) == true, areServable(headers) else { return nil }
        return (Int(status), requestTime, responseTime, headers)
    }

    /// A stored field name: the literal for a common one (a token by construction), else
    /// the bytes if they are a token; nil when they are not.
    private static func fieldName(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        if let known = KnownFieldNames.literal(bytes) { return known }
        return FieldSyntax.isToken(bytes) ? String(decoding: bytes, as: UTF8.self) : nil
    }

    /// The whole entry's length, or nil when the lengths overflow (so never equal to a real size).
    static func totalLength(key: UInt32, meta: UInt32, body: UInt64, rendition: UInt32) -> UInt64? {
        let (withBody, overflow) = UInt64(headerSize + Int(key) + Int(meta) + Int(rendition)).addingReportingOverflow(body)
        return overflow ? nil : withBody
    }

    /// Latest time an entry may carry: 9999-12-31T23:59:59Z, the last second an HTTP date can state.
    static let latestTime: Double = 253_402_300_799

    /// A stored time, if it is a finite number of seconds from 1970 up to `latestTime`
    /// (so every later conversion to whole seconds is safe).
    private static func time(_ bits: UInt64) -> Date? {
        let seconds = Double(bitPattern: bits)
        guard seconds.isFinite, seconds >= 0, seconds <= latestTime else { return nil }
        return Date(timeIntervalSince1970: seconds)
    }

    static func append<T: FixedWidthInteger>(_ value: T, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { out += $0 }
    }

    /// Reads little-endian integers and byte runs, never past the end.
    struct Reader {
        let bytes: ArraySlice<UInt8>
        var offset: Int

        init(bytes: ArraySlice<UInt8>) {
            self.bytes = bytes
            offset = bytes.startIndex
        }

        var remaining: Int { bytes.endIndex - offset }

        mutating func take(_ n: Int) -> ArraySlice<UInt8>? {
            guard n >= 0, n <= remaining else { return nil }
            defer { offset += n }
            return bytes[offset..<(offset + n)]
        }

        mutating func u32() -> UInt32? { take(4).map { UInt32(truncatingIfNeeded: Self.littleEndian($0)) } }
        mutating func u64() -> UInt64? { take(8).map(Self.littleEndian) }

        /// The little-endian number in `bytes` (at most 8), without an intermediate array.
        private static func littleEndian(_ bytes: ArraySlice<UInt8>) -> UInt64 {
            var value: UInt64 = 0
            for index in bytes.indices.reversed() { value = value << 8 | UInt64(bytes[index]) }
            return value
        }
    }
}
