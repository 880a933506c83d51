import Crypto
import Foundation

/// The bytes of one disk entry:
///
///     magic "LRDR" | version u32 | key length u32 | metadata length u32 | body length u64 |
///     SHA-256 of (key, metadata, body) 32 bytes | key | metadata | body
///
/// metadata = status u32 | request time f64 | response time f64 | field count u32 |
/// per field: name length u32, name, value length u32, value. Integers little-endian.
/// Decoding checks every length against what is there and the checksum against the bytes,
/// so a flipped, truncated or empty file is rejected, never misread.
enum DiskEntryCodec {
    static let magic: [UInt8] = Array("LRDR".utf8)
    static let version: UInt32 = 1
    static let headerSize = 4 + 4 + 4 + 4 + 8 + 32

    static func encode(key: String, entry: CacheEntry) -> [UInt8] {
        var meta: [UInt8] = []
        meta.reserveCapacity(32 + entry.headers.count * 48)
        append(UInt32(entry.status), to: &meta)
        append(entry.requestTime.timeIntervalSince1970.bitPattern, to: &meta)
        append(entry.responseTime.timeIntervalSince1970.bitPattern, to: &meta)
        append(UInt32(entry.headers.count), to: &meta)
        for field in entry.headers {
            append(UInt32(field.name.utf8.count), to: &meta)
            meta += field.name.utf8
            append(UInt32(field.value.utf8.count), to: &meta)
            meta += field.value.utf8
        }
        let keyBytes = Array(key.utf8)
        var hasher = SHA256()
        hasher.update(data: keyBytes)
        hasher.update(data: meta)
        hasher.update(data: entry.body)
        let digest = Array(hasher.finalize())

        var out = magic
        out.reserveCapacity(headerSize + keyBytes.count + meta.count + entry.body.count)
        append(version, to: &out)
        append(UInt32(keyBytes.count), to: &out)
        append(UInt32(meta.count), to: &out)
        append(UInt64(entry.body.count), to: &out)
        out += digest
        out += keyBytes
        out += meta
        out += entry.body
        return out
    }

    /// The entry, if the bytes are a whole, unaltered entry for `key`.
    static func decode(_ bytes: [UInt8], key: String) -> CacheEntry? {
        var reader = Reader(bytes: bytes)
        guard reader.take(4) == magic[...], reader.u32() == version,
              let keyLength = reader.u32(), let metaLength = reader.u32(), let bodyLength = reader.u64(),
              let digest = reader.take(32),
              UInt64(bytes.count) == UInt64(headerSize) + UInt64(keyLength) + UInt64(metaLength) + bodyLength,
              let keyBytes = reader.take(Int(keyLength)), let meta = reader.take(Int(metaLength)),
              let body = reader.take(Int(bodyLength)) else { return nil }
        var hasher = SHA256()
        hasher.update(data: keyBytes)
        hasher.update(data: meta)
        hasher.update(data: body)
        guard Array(hasher.finalize()) == Array(digest), keyBytes.elementsEqual(key.utf8) else { return nil }

        var fields = Reader(bytes: Array(meta))
        guard let status = fields.u32(), let requestBits = fields.u64(), let responseBits = fields.u64(),
              let count = fields.u32(), count <= 10_000 else { return nil }
        var headers: [(name: String, value: String)] = []
        for _ in 0..<count {
            guard let nameLength = fields.u32(), let name = fields.take(Int(nameLength)),
                  let valueLength = fields.u32(), let value = fields.take(Int(valueLength)) else { return nil }
            headers.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
        }
        return CacheEntry(status: Int(status), headers: headers, body: Array(body),
                          requestTime: Date(timeIntervalSince1970: Double(bitPattern: requestBits)),
                          responseTime: Date(timeIntervalSince1970: Double(bitPattern: responseBits)))
    }

    private static func append<T: FixedWidthInteger>(_ value: T, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { out += $0 }
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        mutating func take(_ n: Int) -> ArraySlice<UInt8>? {
            guard n >= 0, n <= bytes.count - offset else { return nil }
            defer { offset += n }
            return bytes[offset..<(offset + n)]
        }

        mutating func u32() -> UInt32? { take(4).map { $0.reversed().reduce(0) { $0 << 8 | UInt32($1) } } }
        mutating func u64() -> UInt64? { take(8).map { $0.reversed().reduce(0) { $0 << 8 | UInt64($1) } } }
    }
}
