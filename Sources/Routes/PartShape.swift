import Foundation
import HTTPCore
import Bodies

/// What an aggregate keeps of one part's JSON: the value at a JSON pointer, the members of an
/// allow list, and (for an aggregate that merges) its members one by one, read as a
/// `JSONValue`. An origin's body is checked to be JSON before it is put inside another
/// document.
///
/// A part's body is the same bytes from one request to the next while its entry is stored,
/// so each body is shaped once and kept (`ShapeMemo`); Larder's own JSON needing no change
/// is used as it is.
struct PartShape: Sendable {
    /// The pointer's reference tokens, unescaped; nil keeps the whole value.
    let pointer: [String]?
    let fields: Set<String>?
    /// Whether the body is Larder's own JSON (a built-in route's), valid by construction.
    let trusted: Bool
    let merge: Bool
    private let memo = ShapeMemo()

    /// A part's JSON as the aggregate uses it: the text put under its name, and with
    /// `merge`, its members (name, value as JSON text) in name order.
    struct Shaped: Sendable {
        let json: [UInt8]
        let members: [(name: String, json: [UInt8])]
    }

    init(pointer: String?, fields: [String]?, trusted: Bool, merge: Bool) {
        self.pointer = pointer.map(Self.tokens)
        self.fields = fields.map(Set.init)
        self.trusted = trusted
        self.merge = merge
    }

    /// RFC 6901 §4: split on `/`, then `~1` is `/` and `~0` is `~`, in that order.
    static func tokens(_ pointer: String) -> [String] {
        pointer.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map {
            $0.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
        }
    }

    /// The part's JSON, or why it cannot be used.
    func shape(_ body: [UInt8]) -> Result<Shaped, ShapeProblem> {
        if trusted, pointer == nil, fields == nil, !merge { return .success(Shaped(json: body, members: [])) }
        return memo.shaped(body) { shapeNow($0) }
    }

    private func shapeNow(_ body: [UInt8]) -> Result<Shaped, ShapeProblem> {
        guard var value = try? JSONValue(reading: body) else { return .failure(ShapeProblem("its answer is not JSON")) }
        for token in pointer ?? [] {
            switch value {
            case .object(let members) where members[token] != nil:
                value = members[token]!
            case .array(let elements) where Int(token).map { token == String($0) && elements.indices.contains($0) } == true:
                value = elements[Int(token)!]
            default:
                return .failure(ShapeProblem("its answer has nothing at the pointer /\(pointer!.joined(separator: "/"))"))
            }
        }
        if let fields {
            guard case .object(let members) = value else { return .failure(ShapeProblem("the value whose fields are kept is not an object")) }
            value = .object(members.filter { fields.contains($0.key) })
        }
        var members: [(name: String, json: [UInt8])] = []
        if merge {
            guard case .object(let object) = value else { return .failure(ShapeProblem("the value to merge is not an object")) }
            for name in object.keys.sorted() { members.append((name, object[name]!.json)) }
        }
        return .success(Shaped(json: pointer == nil && fields == nil ? body : value.json, members: members))
    }
}

/// Why a part's answer could not be used, in words for the caller.
struct ShapeProblem: Error, Equatable {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}

/// The shapes of the bodies a part has seen. Keyed by where a body's bytes are stored, not
/// by the bytes: a stored answer's body is one array for as long as it is stored, and hashing
/// its bytes on every request was a tenth of an aggregate's cost under perf. The body is kept
/// with its shape, so its storage cannot be freed and its address reused by another while
/// its entry is here. At most a MiB is kept (a body and its shape counted twice its size),
/// then it starts again; a body over an eighth of that is shaped every time.
final class ShapeMemo: Sendable {
    private struct Kept {
        let body: [UInt8]
        let shape: Result<PartShape.Shaped, ShapeProblem>
    }
    /// A body and its shape count twice the body's size.
    private let kept = BoundedMemo<Int, Kept>(budget: 1 << 20)

    func shaped(_ body: [UInt8], _ make: ([UInt8]) -> Result<PartShape.Shaped, ShapeProblem>) -> Result<PartShape.Shaped, ShapeProblem> {
        let address = body.withUnsafeBufferPointer { Int(bitPattern: $0.baseAddress) }
        if let known = kept[address], known.body.count == body.count { return known.shape }
        let made = make(body)
        kept.keep(Kept(body: body, shape: made), for: address, cost: 2 * body.count)
        return made
    }
}
