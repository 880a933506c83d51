/// How much of one answer Larder takes from an upstream. Up to `largestBody` is held in
/// memory while it is fetched; a pass-through answer beyond that goes on into a spool file
/// (`BodyFile.spool`) up to `largestSpooled`, the most `max-object-size` may be; anything
/// larger taken whole is refused (502) rather than allowed to grow a file without bound.
///
/// A pass-through 200 that states a `Content-Length` of `streamedFrom` or more, or states no
/// length and passes `streamedFrom` while arriving, is relayed as it arrives instead
/// (`BodyStream`), of any length (past `max-object-size`, not stored): smaller answers come
/// in a few reads anyway, are cheaper sent whole, and fail whole (a 502, not a body cut short).
public enum HeldAnswer {
    public static let largestBody = 8 << 20
    public static let largestSpooled = 1 << 30
    public static let streamedFrom = 1 << 20
    /// Where an answer's body begins in its spool file (`BodyFile.headRoom`): room for the
    /// head of the disk entry the file may become; a head larger than this is copied.
    public static let spoolHeadRoom = 64 << 10
}
