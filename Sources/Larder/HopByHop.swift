/// RFC 9110 §7.6.1: fields that describe one connection, not the message. A gateway drops
/// them (and every field `Connection` names) in both directions.
enum HopByHop {
    static let names: Set<String> = ["connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade",
                                     "trailer", "proxy-authenticate", "proxy-authorization", "proxy-authentication-info"]

    /// The fields without the hop-by-hop ones and without `dropping` (lower-case names).
    static func removed(from fields: some Sequence<(name: String, value: String)>,
                        dropping: Set<String> = []) -> [(name: String, value: String)] {
        var listed = names.union(dropping)
        for field in fields where field.name.lowercased() == "connection" {
            for token in field.value.split(separator: ",") {
                listed.insert(token.trimmingCharacters(in: .whitespaces).lowercased())
            }
        }
        return fields.filter { !listed.contains($0.name.lowercased()) }
    }
}
