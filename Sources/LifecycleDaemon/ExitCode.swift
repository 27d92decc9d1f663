/// Process exit codes from sysexits(3), as the daemon uses them.
public enum SysExit: Int32, Sendable {
    /// Clean termination.
    case ok = 0
    /// The command line was wrong (EX_USAGE).
    case usage = 64
    /// Something the daemon needs from the system failed (EX_OSERR).
    case osError = 71
    /// A software error that should not happen (EX_SOFTWARE).
    case software = 70
    /// The configuration file is wrong (EX_CONFIG).
    case configuration = 78
}
