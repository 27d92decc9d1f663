//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) @testable import LifecycleDaemon
@_spi(Internal) import LifecycleKit
import LifecycleSystemd
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Writes text to a fresh file under /tmp and returns its path.
func temporaryFile(_ text: String) -> String {
    var template = Array("/tmp/lifecycled-test-XXXXXX.conf".utf8CString)
    let fd = template.withUnsafeMutableBufferPointer { mkstemps($0.baseAddress!, 5) }
    precondition(fd >= 0, "mkstemps failed")
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// An application's own section, as a user of ``ApplicationMain`` declares one.
struct ModeSettings: ConfigurationSection {
    static let name = "Demo"
    static let keys: [ConfigurationKey<Self>] = [
        .text("Mode", \.mode),
        .integer("Port", \.port, in: 1...65535),
        .duration("DrainSec", \.drain),
    ]
    var mode: String? = "serving"
    var port = 8080
    var drain = Duration.seconds(5)

    func validate() throws(ConfigurationValueError) {
        if mode == "maintenance", port != 8080 {
            throw ConfigurationValueError("maintenance mode serves on port 8080 only")
        }
    }
}

@MainActor
final class QuietDelegate: ApplicationDelegate {}

@Suite("Configuration and the signal map")
struct ConfigurationTests {
    @Test func theDefaultMapIsTheContractsTable() {
        let map = SignalMap.standard.requests
        #expect(map[.user1] == .enterBackground)
        #expect(map[.terminalStop] == .enterBackground)
        #expect(map[.user2] == .becomeActive)
        #expect(map[.continue] == .becomeActive)
        #expect(map[.hangup] == .reload)
        #expect(map[.terminate] == .terminate)
        #expect(map[.interrupt] == .terminate)
        #expect(map[UnixSignal(name: "SIGRTMIN+2")!] == .memoryWarning)
        #expect(map[UnixSignal(name: "SIGRTMIN+3")!] == .resignActive)
        #expect(map.count == 9)
    }

    @Test func aFileOverridesTheDefaultsSectionBySection() throws {
        var configuration = DaemonConfiguration()
        try configuration.apply(
            text: """
                # comment
                [Signals]
                SIGUSR1=memory-warning
                SIGTSTP=default
                SIGWINCH=reload

                [Launch]
                Into=background

                [Trace]
                All=yes

                [BackgroundTasks]
                BudgetSec=2.5

                [MemoryPressure]
                ThresholdMSec=150
                WindowSec=1
                MinimumIntervalSec=30

                [Demo]
                Mode=maintenance
                """,
            source: "test.conf",
            applicationSection: ModeSettings.self
        )
        #expect(configuration.signalMap.requests[.user1] == .memoryWarning)
        #expect(configuration.signalMap.requests[.terminalStop] == nil)
        #expect(configuration.signalMap.requests[UnixSignal(name: "SIGWINCH")!] == .reload)
        #expect(configuration.launchInto == .background)
        #expect(configuration.traceAll)
        #expect(configuration.backgroundTaskBudget == .milliseconds(2500))
        #expect(configuration.memoryPressureThreshold == .milliseconds(150))
        #expect(configuration.memoryPressureWindow == .seconds(1))
        #expect(configuration.memoryWarningMinimumInterval == .seconds(30))
        #expect((configuration.applicationSettings as? ModeSettings)?.mode == "maintenance")
    }

    /// Applies `text` and returns the error's description.
    private func error(_ text: String) -> String? {
        var configuration = DaemonConfiguration()
        do {
            try configuration.apply(text: text, source: "/etc/lifecycled.conf")
            return nil
        } catch {
            return error.description
        }
    }

    @Test func mappingSIGKILLOrSIGSTOPIsRejectedNamingTheSignalFileAndLine() {
        #expect(error("[Signals]\nSIGKILL=terminate") == "/etc/lifecycled.conf:2: SIGKILL cannot be mapped: no process can catch or block it")
        #expect(error("[Signals]\n\nSTOP=background") == "/etc/lifecycled.conf:3: SIGSTOP cannot be mapped: no process can catch or block it")
    }

    @Test func mappingSIGABRTOrASynchronousFaultSignalIsRejectedNamingTheSignalFileAndLine() {
        #expect(
            error("[Signals]\nSIGABRT=background")
                == "/etc/lifecycled.conf:2: SIGABRT cannot be mapped: it reports a crash (abort(), a failed precondition, the watchdog's abort) and must end the process"
        )
        for name in ["SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGTRAP", "SIGSYS", "segv"] {
            let text = error("[Signals]\n\(name)=memory-warning")
            #expect(text?.hasPrefix("/etc/lifecycled.conf:2: SIG") == true, "\(name): \(text ?? "accepted")")
            #expect(text?.contains(" cannot be mapped: ") == true, "\(name): \(text ?? "accepted")")
        }
        #expect(throws: ConfigurationError(
            source: "--signal",
            line: nil,
            message: "SIGBUS cannot be mapped: the kernel sends it for a fault of the process itself (a crash), which must end the process"
        )) {
            _ = try SignalMap.parseEntry("SIGBUS=terminate")
        }
    }

    @Test func anUnknownSignalIsRejectedWithWhatWouldBeValid() {
        let message = error("[Signals]\nSIGFOO=reload")
        #expect(message?.hasPrefix("/etc/lifecycled.conf:2: \"SIGFOO\" is not a signal") == true)
        #expect(message?.contains("SIGRTMIN+2") == true)
        #expect(error("[Signals]\nSIGRTMIN+99=reload")?.contains("\"SIGRTMIN+99\" is not a signal") == true)
    }

    @Test func oneSignalMappedTwiceIsRejectedNamingBothLines() {
        #expect(
            error("[Signals]\nSIGUSR1=background\nUSR1=reload")
                == "/etc/lifecycled.conf:3: SIGUSR1 is mapped twice (first on line 2); map each signal once"
        )
    }

    @Test func badActionsSectionsKeysAndValuesNameWhatWouldBeValid() {
        #expect(error("[Signals]\nSIGUSR1=sleep")?.contains("valid: background, foreground, inactive, reload, terminate, memory-warning, default") == true)
        #expect(error("[Nope]")?.contains(":1: unknown section [Nope]; valid: [BackgroundTasks]") == true)
        #expect(error("[Launch]\nWhen=now")?.contains(":2: unknown key When= in [Launch]; valid: Into=") == true)
        #expect(error("[Launch]\nInto=sideways")?.contains("valid: active, background") == true)
        #expect(error("[Trace]\nAll=maybe")?.contains("not a boolean") == true)
        #expect(error("Into=active")?.contains(":1: Into= comes before any [Section]") == true)
        #expect(error("[Launch]\nInto=active\nInto=background")?.contains(":3: Into= is set twice in [Launch] (first on line 2)") == true)
        #expect(error("[MemoryPressure]\nThresholdMSec=5000")?.contains("must not exceed its window") == true)
        #expect(error("[BackgroundTasks]\nBudgetSec=-1")?.contains("not a non-negative number") == true)
    }

    @Test func theLogFormatIsReadFromItsSectionAndABadOneNamesTheLineAndTheValidFormats() throws {
        var configuration = DaemonConfiguration()
        #expect(configuration.logFormat == .auto)
        for format in LogFormat.allCases {
            try configuration.apply(text: "[Logging]\nFormat=\(format.rawValue)\n", source: "test.conf")
            #expect(configuration.logFormat == format)
        }
        #expect(error("[Logging]\nFormat=yaml") == "/etc/lifecycled.conf:2: Format=yaml is not a log format; valid: auto, journal, json, text")
        #expect(error("[Logging]\nFormat=JSON")?.hasSuffix("is not a log format; valid: auto, journal, json, text") == true)
        #expect(error("[Logging]\nLevel=debug") == "/etc/lifecycled.conf:2: unknown key Level= in [Logging]; valid: Format=")
    }

    @Test func aFileOnDiskIsReadAndItsErrorsNameItsPath() throws {
        let good = temporaryFile("[Launch]\nInto=background\n")
        let bad = temporaryFile("[Launch]\nInto=background\n[Signals]\nSIGSTOP=background\n")
        defer {
            unlink(good)
            unlink(bad)
        }
        var configuration = DaemonConfiguration()
        try configuration.load(file: good)
        #expect(configuration.launchInto == .background)
        #expect(throws: ConfigurationError(source: bad, line: 4, message: "SIGSTOP cannot be mapped: no process can catch or block it")) {
            var other = DaemonConfiguration()
            try other.load(file: bad)
        }
    }

    @Test func aMissingFileIsNamedWithTheSystemsReason() {
        var configuration = DaemonConfiguration()
        #expect(throws: ConfigurationError.self) { try configuration.load(file: "/nonexistent/lifecycled.conf") }
        do {
            try configuration.load(file: "/nonexistent/lifecycled.conf")
        } catch {
            #expect(error.description == "/nonexistent/lifecycled.conf: cannot be read: No such file or directory")
        }
    }

    @Test func signalFlagsApplyOverTheFileAndTwiceTheSameIsRejected() throws {
        var options = DaemonOptions()
        options.signalOverrides = ["SIGUSR1=reload", "SIGHUP=default"]
        let configuration = try options.resolveConfiguration()
        #expect(configuration.signalMap.requests[.user1] == .reload)
        #expect(configuration.signalMap.requests[.hangup] == nil)
        options.signalOverrides = ["SIGUSR1=reload", "USR1=background"]
        #expect(throws: ConfigurationError.self) { try options.resolveConfiguration() }
        options.signalOverrides = ["SIGKILL=terminate"]
        #expect(throws: ConfigurationError.self) { try options.resolveConfiguration() }
        options.signalOverrides = ["SIGUSR1"]
        #expect(throws: ConfigurationError.self) { try options.resolveConfiguration() }
    }

    @Test func theEnvironmentTurnsOnTheTraceAndTheHang() {
        var options = DaemonOptions()
        options.applyEnvironment(["LIFECYCLE_TRACE": "all", "LIFECYCLE_HANG_IN": "applicationDidEnterBackground"])
        #expect(options.traceAll)
        #expect(options.hangIn == "applicationDidEnterBackground")
        var other = DaemonOptions()
        other.applyEnvironment(["LIFECYCLE_TRACE": "delegate"])
        #expect(!other.traceAll)
    }

    @MainActor
    @Test func anInvalidConfigurationFileMakesTheDaemonExitWithEXCONFIG() {
        var options = DaemonOptions()
        options.configurationPath = "/nonexistent/lifecycled.conf"
        #expect(Daemon.run(options: options, makeDelegate: { QuietDelegate() }) == 78)
    }

    /// Applies `text` with the application's section and returns the error's description.
    private func applicationError(_ text: String) -> String? {
        var configuration = DaemonConfiguration()
        do {
            try configuration.apply(text: text, source: "/etc/app.conf", applicationSection: ModeSettings.self)
            return nil
        } catch {
            return error.description
        }
    }

    @Test func anApplicationsSectionIsReadThroughItsOwnKeyTable() throws {
        var configuration = DaemonConfiguration()
        try configuration.apply(
            text: "[Launch]\nInto=background\n[Demo]\nPort=9090\nDrainSec=1.5\n",
            source: "app.conf",
            applicationSection: ModeSettings.self
        )
        let settings = try #require(configuration.applicationSettings as? ModeSettings)
        #expect(settings.port == 9090)
        #expect(settings.drain == .milliseconds(1500))
        #expect(settings.mode == "serving")
        #expect(configuration.launchInto == .background)
    }

    @Test func anApplicationsSectionReportsErrorsLikeTheDaemonsOwn() {
        #expect(applicationError("[Demo]\nPort=70000") == "/etc/app.conf:2: Port=70000 is not a whole number from 1 to 65535")
        #expect(applicationError("[Demo]\nPorts=1") == "/etc/app.conf:2: unknown key Ports= in [Demo]; valid: Mode=, Port=, DrainSec=")
        #expect(applicationError("[Demo]\nPort=1\nPort=2") == "/etc/app.conf:3: Port= is set twice in [Demo] (first on line 2)")
        #expect(
            applicationError("[Demo]\nMode=maintenance\nPort=9000")
                == "/etc/app.conf:3: maintenance mode serves on port 8080 only"
        )
        // The application's section is among the valid ones; without it, it is unknown.
        #expect(applicationError("[Server]")?.contains("valid: [BackgroundTasks], [Control], [Demo], [Launch]") == true)
        #expect(error("[Demo]\nPort=1")?.contains(":1: unknown section [Demo]") == true)
    }

    /// systemd's parser reads CR LF line ends (a file written on Windows) as LF; Swift takes "\r\n" for one Character,
    /// so a split on "\n" read the whole file as its first line.
    @Test func aFileWithCRLFLineEndsReadsAsOneWithLFAndItsErrorsNameTheRightLine() throws {
        var configuration = DaemonConfiguration()
        try configuration.apply(text: "[Control]\r\nEnable=no\r\n\r\n[Launch]\r\nInto=background", source: "crlf.conf")
        #expect(!configuration.control.isEnabled)
        #expect(configuration.launchInto == .background)
        #expect(
            error("[Launch]\r\n# comment\r\nInto=sideways\r\n")
                == "/etc/lifecycled.conf:3: Into=sideways is not a launch target; valid: active, background"
        )
    }

    @Test func aByteOrderMarkBeforeTheFirstLineIsSkipped() throws {
        var configuration = DaemonConfiguration()
        try configuration.apply(text: "\u{FEFF}[Launch]\nInto=background\n", source: "bom.conf")
        #expect(configuration.launchInto == .background)
        // Only at the start of the file: anywhere else it is part of the line.
        #expect(error("[Launch]\n\u{FEFF}Into=background")?.hasPrefix("/etc/lifecycled.conf:2: unknown key \u{FEFF}Into=") == true)
    }

    @Test func controlCharactersOfTheFileAreEscapedInTheQuotedTextOfAnError() {
        let escape = error("[Launch\u{1B}[2J\u{1B}]0;owned\u{07}\nInto=active")
        #expect(escape == #"/etc/lifecycled.conf:1: "[Launch\x1b[2J\x1b]0;owned\x07" is not a [Section] header"#)
        #expect(error("[Launch]\nInto=back\u{0}ground") == #"/etc/lifecycled.conf:2: Into=back\x00ground is not a launch target; valid: active, background"#)
        #expect(error("[Launch]\nInto=a\rb")?.contains(#"Into=a\rb is not"#) == true)
        #expect(error("[Launch]\nInto=\u{202E}dnuorgkcab")?.contains(#"Into=\u{202e}dnuorgkcab is not"#) == true)
        // The error itself keeps the text as it was; only its printed form is escaped.
        var configuration = DaemonConfiguration()
        #expect(throws: ConfigurationError(source: "x.conf", line: 2, message: "Into=\u{1B} is not a launch target; valid: active, background")) {
            try configuration.apply(text: "[Launch]\nInto=\u{1B}", source: "x.conf")
        }
    }

    /// The kernel refuses a PSI trigger whose window is outside 500 ms to 10 s, or whose threshold is 0 (EINVAL): the
    /// daemon only warned once running that memory pressure could not be watched.
    @Test func aMemoryPressureTriggerTheKernelWouldRefuseIsAConfigurationError() throws {
        for window in ["0", "0.4", "0.4999", "10.001", "20", "-1", "soon"] {
            #expect(
                error("[MemoryPressure]\nThresholdMSec=100\nWindowSec=\(window)")
                    == "/etc/lifecycled.conf:3: WindowSec=\(window) is not a number of seconds from 0.5 to 10 (the windows the kernel accepts for a PSI trigger)"
            )
        }
        #expect(
            error("[MemoryPressure]\nThresholdMSec=0")
                == "/etc/lifecycled.conf:2: ThresholdMSec=0 is not a positive number of milliseconds (the kernel refuses a PSI trigger threshold of 0); valid: above 0, at most the window, WindowSec="
        )
        // Refused whether or not the pressure is watched: such a file could never turn the watch on.
        #expect(error("[MemoryPressure]\nWatch=no\nWindowSec=30")?.hasPrefix("/etc/lifecycled.conf:3: WindowSec=30 is not") == true)
        var configuration = DaemonConfiguration()
        try configuration.apply(text: "[MemoryPressure]\nThresholdMSec=0.001\nWindowSec=0.5\n", source: "edge.conf")
        #expect(configuration.memoryPressureWindow == .milliseconds(500))
        #expect(configuration.memoryPressureThreshold == .microseconds(1))
        try configuration.apply(text: "[MemoryPressure]\nThresholdMSec=10000\nWindowSec=10\n", source: "edge.conf")
        #expect(configuration.memoryPressureWindow == .seconds(10))
        #expect(configuration.memoryPressureThreshold == .seconds(10))
    }

    /// What the daemon reads at start and on every reload (a ConfigurationError there is exit 78, or a refused reload).
    @Test func anUnarmableMemoryPressureTriggerInTheFileFailsTheDaemonsConfiguration() {
        let path = temporaryFile("[MemoryPressure]\nWindowSec=60\n")
        defer { unlink(path) }
        var options = DaemonOptions()
        options.configurationPath = path
        #expect(throws: ConfigurationError(
            source: path,
            line: 2,
            message: "WindowSec=60 is not a number of seconds from 0.5 to 10 (the windows the kernel accepts for a PSI trigger)"
        )) {
            try options.resolveConfiguration()
        }
    }

    /// SIGCHLD reports a child's exit: mapped as PID 1 it made the reaper's own watch fail (EBUSY, exit 71), and
    /// elsewhere the exit of the upgrade's keeper process would have been taken for a request.
    @Test func mappingSIGCHLDIsRejectedWithItsReason() {
        let reason = "SIGCHLD cannot be mapped: the kernel sends it when a child exits (the upgrade's keeper process; as PID 1, every orphan the daemon reaps), so a child's exit would be taken for a request"
        #expect(error("[Signals]\nSIGCHLD=memory-warning") == "/etc/lifecycled.conf:2: " + reason)
        #expect(error("[Signals]\nCHLD=default") == "/etc/lifecycled.conf:2: " + reason)
        #expect(throws: ConfigurationError(source: "--signal", line: nil, message: reason)) {
            _ = try SignalMap.parseEntry("SIGCHLD=memory-warning")
        }
    }

    @Test func everyDaemonKeyIsListedOnceInItsTable() {
        for section in DaemonConfiguration.sections {
            let names = section.keys.map(\.name)
            #expect(Set(names).count == names.count, "\(section.name) lists a key twice")
        }
        #expect(Set(DaemonConfiguration.sectionNames).count == DaemonConfiguration.sectionNames.count)
    }
}
