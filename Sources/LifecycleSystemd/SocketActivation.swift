import CSystemd

#if canImport(Glibc)
import Glibc
#endif

/// Sockets a `.socket` unit handed over (`LISTEN_FDS`, `LISTEN_PID`, `LISTEN_FDNAMES`).
public enum SocketActivation {
    /// One descriptor systemd passed, with its name (`FileDescriptorName=`, by default the socket unit's name).
    public struct Socket: Hashable, Sendable {
        public var name: String
        public var descriptor: Int32

        public init(name: String, descriptor: Int32) {
            self.name = name
            self.descriptor = descriptor
        }
    }

    /// The descriptors passed to this process (none when `LISTEN_PID` names another), in order. The variables are
    /// removed from the environment, so that a child does not take them for its own.
    public static func take() -> [Socket] {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let count = sd_listen_fds_with_names(1, &names)
        guard count > 0 else { return [] }
        defer {
            if let names {
                for index in 0..<Int(count) { free(names[index]) }
                free(names)
            }
        }
        return (0..<count).map { index in
            let name = names?[Int(index)].map { String(cString: $0) } ?? "unknown"
            return Socket(name: name, descriptor: SD_LISTEN_FDS_START + index)
        }
    }
}
