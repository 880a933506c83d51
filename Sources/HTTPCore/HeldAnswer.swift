/// The most Larder holds of one answer's body: an upstream's answer is held whole in memory
/// while it is fetched, so a larger one is refused (502) rather than allowed to grow a buffer
/// without bound. The upstream client stops there, and `max-object-size` cannot pass it.
public enum HeldAnswer {
    public static let largestBody = 8 << 20
}
