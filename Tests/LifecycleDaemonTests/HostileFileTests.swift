//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Dispatch
@_spi(Internal) @testable import LifecycleDaemon
@_spi(Internal) import LifecycleKit
import LifecyclePrimitives
import LifecycleSystemd
import Logging
import Testing

#if canImport(Glibc)
import Glibc
#endif

// What the daemon is pointed at is not always a file: a FIFO or a device at the configuration, storyboard or state
// path used to hang it (open waited for a writer, read never ended). Each read here runs on a thread of its own with a
// deadline, so that a regression fails the test instead of hanging the run.

/// Runs `body` on a thread of its own; its result, or nil if it has not returned within `seconds`. `release` runs
/// then, to unblock it (it stays behind otherwise).
private func within<T: Sendable>(
    _ seconds: Int,
    release: @escaping @Sendable () -> Void = {},
    _ body: @escaping @Sendable () -> T
) -> T? {
    let result = ConditionLock<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
        let value = body()
        result.withLock { $0 = value }
        done.signal()
    }
    guard done.wait(timeout: .now() + .seconds(seconds)) == .success else {
        release()
        return nil
    }
    return result.withLock { $0 }
}

/// Opens a FIFO for writing and closes it: a reader blocked in open() or read() on it gets end of file.
private func releaseFIFO(_ path: String) {
    let fd = open(path, O_WRONLY | O_NONBLOCK)
    if fd >= 0 { close(fd) }
}

/// What stat(2) says of `path`.
private func status(of path: String) -> stat {
    var status = stat()
    #expect(stat(path, &status) == 0, "stat \(path): errno \(errno)")
    return status
}

@Suite("Files that are not files")
struct HostileFileTests {
    let directory = temporaryDirectory()

    @Test func aFIFOAsTheConfigurationIsAConfigurationErrorNotAHang() throws {
        let path = directory + "/lifecycled.conf"
        #expect(mkfifo(path, 0o600) == 0)
        let outcome = within(5, release: { releaseFIFO(path) }) { () -> String in
            do throws(ConfigurationError) {
                _ = try ConfigurationFile(contentsOf: path)
                return "read"
            } catch {
                return error.description
            }
        }
        #expect(outcome == "\(path): cannot be read: it is a FIFO, not a regular file")
    }

    @Test func aDeviceAsTheConfigurationIsRefusedBeforeAByteIsRead() {
        let outcome = within(5) { () -> String in
            do throws(ConfigurationError) {
                _ = try ConfigurationFile(contentsOf: "/dev/zero")
                return "read"
            } catch {
                return error.description
            }
        }
        #expect(outcome == "/dev/zero: cannot be read: it is a character device, not a regular file")
    }

    @Test func theNullDeviceAsTheConfigurationIsAnEmptyFile() throws {
        #expect(try ConfigurationFile(contentsOf: "/dev/null").entries.isEmpty)
        // By any name: it is the device that counts (a link, the descriptor's path in /proc).
        let link = directory + "/lifecycled.conf"
        #expect(symlink("/dev/null", link) == 0)
        #expect(try ConfigurationFile(contentsOf: link).entries.isEmpty)
        var options = DaemonOptions()
        options.configurationPath = "/dev/null"
        let configuration = try options.resolveConfiguration(applicationSection: ModeSettings.self)
        #expect(configuration.signalMap == SignalMap.standard)
        #expect(configuration.launchInto == .active)
        #expect((configuration.applicationSettings as? ModeSettings) == ModeSettings())
    }

    @Test func aDeviceOrFIFOCalledNullIsStillRefused() throws {
        // Not by its name: another character device behind the name null is what it is.
        let link = directory + "/null"
        #expect(symlink("/dev/zero", link) == 0)
        #expect(throws: ConfigurationError(
            source: link,
            line: nil,
            message: "cannot be read: it is a character device, not a regular file"
        )) {
            _ = try ConfigurationFile(contentsOf: link)
        }
        let fifo = directory + "/dev-null"
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(throws: ConfigurationError(source: fifo, line: nil, message: "cannot be read: it is a FIFO, not a regular file")) {
            _ = try ConfigurationFile(contentsOf: fifo)
        }
        #expect(RegularFile.isNullDevice(status(of: "/dev/null")))
        #expect(!RegularFile.isNullDevice(status(of: "/dev/zero")))
        #expect(!RegularFile.isNullDevice(status(of: fifo)))
    }

    @Test func theNullDeviceIsNoStoryboardOrStateFile() {
        // Only the configuration reads it as empty: an empty storyboard or saved state would be a tree or a state.
        #expect(throws: RegularFileError.notRegular(kind: "a character device")) {
            _ = try RegularFile.readBytes("/dev/null", limit: RegularFile.storyboardLimit)
        }
    }

    @Test func aConfigurationLargerThanOneMiBIsRefused() throws {
        let path = directory + "/big.conf"
        writeFile(path, Array(repeating: UInt8(ascii: "#"), count: (1 << 20) + 1))
        #expect(throws: ConfigurationError(
            source: path,
            line: nil,
            message: "cannot be read: it is larger than 1 MiB, the most such a file may be"
        )) {
            _ = try ConfigurationFile(contentsOf: path)
        }
        writeFile(path, Array(repeating: UInt8(ascii: "#"), count: 1 << 20))
        #expect(try ConfigurationFile(contentsOf: path).entries.isEmpty)
    }

    @Test func aFIFOAsTheStoryboardIsAnErrorNotAHang() throws {
        let path = directory + "/tree.storyboard"
        #expect(mkfifo(path, 0o600) == 0)
        let outcome = within(5, release: { releaseFIFO(path) }) { () -> String in
            do {
                _ = try StoryboardFile.read(path)
                return "read"
            } catch {
                return "\(error)"
            }
        }
        #expect(outcome?.contains("it is a FIFO, not a regular file") == true, "\(outcome ?? "hung")")
    }

    @MainActor
    @Test func aFIFOAsTheStateFileIsRefusedWithOneWarningAndTheLaunchIsFresh() throws {
        let log = StallLog()
        #expect(mkfifo(directory + "/state.archive", 0o600) == 0)
        var settings = RestorationSettings()
        settings.stateDirectory = directory
        settings.fileDescriptorStore = .no
        let store = StateStore(settings: settings, notifier: .disabled, environment: [:], logger: log.logger())
        // The store lives on the main actor: a hang there would hang the run, so the FIFO is released after 5 s.
        let path = directory + "/state.archive"
        let watchdog = DispatchWorkItem { releaseFIFO(path) }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(5), execute: watchdog)
        let loaded = store.load()
        watchdog.cancel()
        #expect(loaded == nil)
        #expect(log.all.filter { $0.level == .warning }.map(\.message) == [
            "the saved state in \(path) cannot be read: it is a FIFO, not a regular file; launching without saved state"
        ])
    }

    @MainActor
    @Test func aStateOfTheHighestGenerationLeavesRoomForTheNextSave() throws {
        let log = StallLog()
        var settings = RestorationSettings()
        settings.stateDirectory = directory
        settings.fileDescriptorStore = .no
        StateStore(settings: settings, notifier: .disabled, environment: [:], logger: log.logger())
            .save(StateStoreTests.archive(generation: Int.max))
        let loaded = try #require(
            StateStore(settings: settings, notifier: .disabled, environment: [:], logger: log.logger()).load()
        )
        #expect(loaded.generation == StateStore.highestRestoredGeneration)
        #expect(loaded.generation.addingReportingOverflow(1 << 32).overflow == false)
        // Restored into an application, whose next save counts one more: it must not trap.
        let application = Application(delegate: RestoringDelegate(), logger: log.logger())
        let saved = ConditionLock<Int?>(nil)
        let host = SaveRecorder { _, archive in saved.withLock { $0 = $0 ?? archive.generation } }
        application.host = host
        var options = LaunchOptions(reason: .test)
        options.restoredState = loaded
        application.launch(options: options)
        application.runEndOfTurn()
        application.requestEnterBackground()
        application.runEndOfTurn()
        #expect(saved.withLock { $0 } == StateStore.highestRestoredGeneration + 1)
    }
}

/// A delegate whose root controller opts in to state restoration.
@MainActor
private final class RestoringDelegate: ApplicationDelegate {
    func application(_ application: Application, didFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
        if application.window == nil {
            let root = ViewController(identifier: "root")
            root.restorationIdentifier = "root"
            application.window = Window(rootViewController: root)
        }
        return true
    }

    func application(_ application: Application, shouldSaveApplicationState coder: StateCoder) -> Bool { true }
    func application(_ application: Application, shouldRestoreApplicationState archive: Archive) -> Bool { true }
}

/// Records the archives the application hands its host to save.
@MainActor
private final class SaveRecorder: ApplicationHost {
    let saved: @MainActor (Application, Archive) -> Void

    init(_ saved: @escaping @MainActor (Application, Archive) -> Void) { self.saved = saved }

    func application(_ application: Application, didEncodeRestorableState archive: Archive) {
        saved(application, archive)
    }
}
