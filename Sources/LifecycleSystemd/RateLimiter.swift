/// At most one event per interval: the first event passes, the next only once the interval has passed since it.
public struct RateLimiter: Hashable, Sendable {
    /// The shortest time between two admitted events.
    public var minimumInterval: Duration
    /// When the last admitted event happened, on the caller's clock.
    public private(set) var lastAdmitted: Duration?

    /// Creates a limiter that has admitted nothing yet.
    public init(minimumInterval: Duration) {
        self.minimumInterval = minimumInterval
    }

    /// Whether an event at `now` (time since any fixed origin) passes; if it does, it becomes the last admitted.
    public mutating func admit(at now: Duration) -> Bool {
        if let lastAdmitted, now - lastAdmitted < minimumInterval { return false }
        lastAdmitted = now
        return true
    }

    /// How long after `now` the next event would pass (zero if it would pass now).
    public func wait(at now: Duration) -> Duration {
        guard let lastAdmitted else { return .zero }
        return max(.zero, lastAdmitted + minimumInterval - now)
    }
}
