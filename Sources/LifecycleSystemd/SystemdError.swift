import SystemPackage

/// A libsystemd (or kernel) call that failed, with the errno it reported.
public struct SystemdError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The call that failed, e.g. `sd_event_add_signal(SIGUSR1)`.
    public let operation: String
    /// The error the call reported.
    public let errno: Errno

    /// Wraps a failed call and its errno.
    public init(operation: String, errno: Errno) {
        self.operation = operation
        self.errno = errno
    }

    /// A full sentence naming the call and the error, e.g. "sd_notify failed: Connection refused (errno 111)."
    public var description: String {
        "\(operation) failed: \(errno.description) (errno \(errno.rawValue))."
    }

    /// Returns a libsystemd result unchanged when it is not negative, else throws it (libsystemd returns -errno).
    @discardableResult
    static func check(_ result: Int32, _ operation: @autoclosure () -> String) throws(SystemdError) -> Int32 {
        guard result < 0 else { return result }
        throw SystemdError(operation: operation(), errno: Errno(rawValue: -result))
    }
}
