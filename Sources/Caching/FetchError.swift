/// How a fetch failed, in the terms the service maps to statuses (504 for a timeout, else 502).
public enum FetchError: Error, Sendable, Equatable {
    case timeout
    case unreachable(String)
}
