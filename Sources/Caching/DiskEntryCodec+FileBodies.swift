import CLinux
import Foundation
import HTTPCore
import Bodies

/// Entries whose body is too large to hold in memory, in the same format: written around a
/// body that lies in a spool file, and read back as a region of their own file, which a
/// connection sends with `sendfile`. Only a relaying route's answers are that large, so such
/// an entry has no rendition.
extension DiskEntryCodec {
    /// The bytes of a file entry before its body (header, key, metadata), checksum included:
    /// `bodyChecksum` continues the checksum over the body, read from wherever it lies, and
    /// is nil when it could not be read.
    /// With `length`, the metadata is padded with zero bytes so the head is that long; nil
    /// when it is longer already.
    static func head(key: String, entry: CacheEntry, length: Int? = nil, bodyChecksum: (UInt32) -> UInt32?) -> [UInt8]? {
        let keyBytes = Array(key.utf8)
        var meta = metadata(of: entry)
        if let length {
            let padding = length - headerSize - keyBytes.count - meta.count
            guard padding >= 0 else { return nil }
            meta += repeatElement(0, count: padding)
        }
        var out = header(key: keyBytes, meta: meta, bodyLength: entry.body.count, renditionLength: 0,
                         capacity: headerSize + keyBytes.count + meta.count)
        out += keyBytes
        out += meta
        let afterHead = out[headerSize...].withUnsafeBytes { larder_crc32c(0, $0.baseAddress, $0.count) }
        guard let crc = bodyChecksum(afterHead) else { return nil }
        withUnsafeBytes(of: crc.littleEndian) { out.replaceSubrange(headerSize - 4..<headerSize, with: $0) }
        return out
    }

    /// Where a file entry's parts lie, read from its fixed header.
    struct FileLayout {
        /// Bytes from the start of the file to the body: header, key and metadata.
        let bodyOffset: Int
        let bodyLength: Int
        let checksum: UInt32
    }

    /// The layout a file of `fileSize` bytes has, from its first `headerSize` bytes; nil when
    /// the header is not ours, its lengths do not add up to the file, or it has a rendition.
    static func fileLayout(_ header: [UInt8], fileSize: Int) -> FileLayout? {
        guard var reader = opened(header), let keyLength = reader.u32(), let metaLength = reader.u32(),
              let bodyLength = reader.u64(), let renditionLength = reader.u32(), let crc = reader.u32(), renditionLength == 0,
              totalLength(key: keyLength, meta: metaLength, body: bodyLength, rendition: 0) == UInt64(fileSize) else { return nil }
        return FileLayout(bodyOffset: headerSize + Int(keyLength) + Int(metaLength), bodyLength: Int(bodyLength), checksum: crc)
    }

    /// The key and the entry, its body the region `layout` gives of `file`, from the file's
    /// first `layout.bodyOffset` bytes; nil when they do not decode. The checksum is the
    /// caller's to verify (it covers the body, which is not read here).
    static func decodeFileEntry(_ head: [UInt8], layout: FileLayout, file: BodyFile) -> (key: String, entry: CacheEntry)? {
        guard head.count == layout.bodyOffset, var reader = opened(head), let keyLength = reader.u32(), let metaLength = reader.u32(),
              reader.take(8 + 4 + 4) != nil,  // body and rendition lengths, checksum: in `layout`
              let keyBytes = reader.take(Int(keyLength)), let meta = reader.take(Int(metaLength)).flatMap(metadata) else { return nil }
        let body = Body.file(FileRegion(file: file, offset: layout.bodyOffset, count: layout.bodyLength))
        return (String(decoding: keyBytes, as: UTF8.self),
                CacheEntry(status: meta.status, headers: meta.headers, body: body, requestTime: meta.requestTime, responseTime: meta.responseTime))
    }

    /// The checksum over `count` bytes of `file` from `offset`, continuing `crc`, read a
    /// mebibyte at a time; nil when the file ends early or cannot be read.
    static func checksum(continuing crc: UInt32, _ file: BodyFile, offset: Int, count: Int) -> UInt32? {
        var crc = crc
        var done = 0
        var chunk = [UInt8](repeating: 0, count: min(count, 1 << 20))
        while done < count {
            let n = chunk.withUnsafeMutableBytes { file.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[..<min($0.count, count - done)]), at: offset + done) }
            guard n > 0 else { return nil }
            crc = chunk.withUnsafeBytes { larder_crc32c(crc, $0.baseAddress, n) }
            done += n
        }
        return crc
    }
}
