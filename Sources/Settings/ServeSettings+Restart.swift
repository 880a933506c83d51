extension ServeSettings {
    /// These settings with each one that only a restart can change (`needsRestart` in its
    /// declaration: the listener, the tiers, logging, the admin listener, Redis) put back to
    /// `running`'s value, and the file keys of those that differed, for a reload.
    public func keepingRestartOnly(from running: ServeSettings) -> (settings: ServeSettings, restartNeeded: [String]) {
        var settings = self
        var changed: [String] = []
        for declaration in Self.declarations where declaration.needsRestart {
            if declaration.keepRunning(&settings, running) { changed.append(declaration.fileKey) }
        }
        return (settings, changed)
    }
}
