import Foundation

/// One upstream request per key across replicas: with a shared tier, the replica that would
/// go to the upstream first takes the key's lock there. Whoever holds it fetches (and stores
/// in every tier before letting go); the others wait for the lock's release, woken by the
/// shared channel or by their own polling, then take what was stored, or the lock, in turn.
/// Nobody waits past `waitLimit` (the upstream timeout): then it fetches itself, as it does
/// whenever the shared tier cannot be asked.
extension Cache {
    /// The exchange with the upstream, coordinated with other replicas. `waits` false (a
    /// background refresh) gives up at once when another replica holds the lock: that
    /// replica's fetch refreshes the shared tier for everyone.
    func coordinatedExchange(_ request: CacheRequest, key: CacheKey, stored: StoredResponse?, waits: Bool = true) async -> Outcome {
        guard let shared else { return await exchange(request, key: key, stored: stored) }
        let deadline = ContinuousClock.now + shared.waitLimit
        var counted = false
        while true {
            let removals = memory.removals
            switch await shared.lock(key) {
            case .unavailable:
                return await exchange(request, key: key, stored: stored)
            case .acquired(let token, let entry):
                // Someone may have stored it between this replica's lookup and its lock.
                if let entry, let found = await usable(await keepShared(key, entry, request, removalsBefore: removals), key, request) {
                    shared.release(key, token: token)
                    return .found(found)
                }
                let outcome = await exchange(request, key: key, stored: stored)
                shared.release(key, token: token)
                return outcome
            case .held:
                guard waits else { return .failure(UpstreamFailure(upstreamStatus: nil, detail: "another replica is refreshing")) }
                if !counted {
                    shared.countWait()
                    counted = true
                }
                let left = deadline - ContinuousClock.now
                guard left > .zero else { return await exchange(request, key: key, stored: stored) }
                await shared.waitForRelease(key, limit: min(left, shared.pollInterval))
                if let found = await usableShared(key, request) { return .found(found) }
            }
        }
    }

    /// A fresh answer for this request in the shared tier (skipping this replica's own
    /// tiers, which missed already), kept locally too.
    private func usableShared(_ key: CacheKey, _ request: CacheRequest) async -> Found? {
        await usable(await readShared(key, request), key, request)
    }

    /// What was read for `key` if it answers this request fresh (a variant index is followed).
    private func usable(_ read: (item: MemoryTier.Item, tier: CacheStatus.Detail)?, _ key: CacheKey, _ request: CacheRequest) async -> Found? {
        guard var found = read else { return nil }
        if case .variants(let index) = found.item {
            guard let variant = await readShared(index.variantKey(key, request: request.headers), request) else { return nil }
            found = variant
        }
        guard case .response(let response) = found.item, decide(response.entry, request).action == .serve else { return nil }
        return Found(response: response, detail: .redis)
    }
}
