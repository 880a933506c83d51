/// What a reload of the configuration did (`SIGHUP`, the admin API's `POST /reload`).
public enum ReloadOutcome: Sendable, Equatable {
    /// The new routes serve; these settings changed but need a restart, and kept their values.
    case reloaded(restartNeeded: [String])
    /// Nothing changed: the file's problems, one per line.
    case refused([String])
    /// Nothing to reload: no configuration file was given (or the service is stopping).
    case unavailable(String)
}
