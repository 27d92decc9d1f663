//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecycleSystemd
import Logging

#if canImport(Glibc)
import Glibc
#endif

extension Daemon {
    /// The watchdog test's switch: when the named callback fires, the main thread blocks forever, so the loop stops
    /// feeding the watchdog.
    /// `CALLBACK` blocks the main thread forever when that callback fires the first time; `CALLBACK=SECONDS` blocks
    /// it that long (the stall detector's tests).
    func installHang(in specification: String) {
        let parts = specification.split(separator: "=", maxSplits: 1).map(String.init)
        let callback = parts[0]
        let seconds = parts.count > 1 ? Double(parts[1]) : nil
        logger.warning("debug: the main thread will block in \(callback) for \(seconds.map { "\($0) s" } ?? "ever")")
        var done = false
        application.trace.observe { [logger] event in
            guard !done, event.event == callback else { return }
            done = true
            logger.critical("debug: blocking in \(callback) (\(event.target)) on purpose")
            guard let seconds else {
                while true { sleep(3600) }
            }
            // A second at a time (the daemon's signals are blocked, so nothing cuts a sleep short).
            var left = UInt64(seconds * 1_000_000)
            while left > 0 {
                let chunk = min(left, 1_000_000)
                usleep(UInt32(chunk))
                left -= chunk
            }
        }
    }

    /// The crash tests' switch, `CALLBACK[=HOW]` (several separated by commas): when a named callback first fires, the
    /// process kills itself with a signal (default `SIGSEGV`, its default action restored first: a real crash, core and
    /// all) or exits with a status (`CALLBACK=exit:3`).
    func installCrash(in specification: String) {
        var endings: [String: String] = [:]
        for entry in specification.split(separator: ",") {
            var callback = String(entry)
            var how = "SIGSEGV"
            if let equals = entry.lastIndex(of: "=") {
                let tail = String(entry[entry.index(after: equals)...])
                if tail.hasPrefix("SIG") || tail.hasPrefix("exit:") {
                    callback = String(entry[..<equals])
                    how = tail
                }
            }
            endings[callback] = how
            logger.warning("debug: the process will end in \(callback) (\(how))")
        }
        application.trace.observe { [logger] event in
            guard let how = endings[event.event] else { return }
            logger.critical("debug: ending in \(event.event) (\(event.target)) on purpose: \(how)")
            JournalWriter.shared.flush()
            if how.hasPrefix("exit:") {
                exit(Int32(how.dropFirst("exit:".count)) ?? 1)
            }
            let number = UnixSignal(name: how)?.rawValue ?? SIGSEGV
            signal(number, SIG_DFL)
            var set = sigset_t()
            sigemptyset(&set)
            sigaddset(&set, number)
            pthread_sigmask(SIG_UNBLOCK, &set, nil)
            raise(number)
        }
    }
}
