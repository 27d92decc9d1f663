//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// Signal names: `--signal SIG=ACTION` values (SignalMap.parseEntry), bare names (UnixSignal(name:): SIGUSR1, usr1,
// RTMIN+3, SIGRTMAX-1) and [Signals] entries of the configuration file. One input is one or more lines, each tried;
// lines end at LF or CR LF, as the configuration file's do (splitLines: by Unicode scalars, since "\r\n" is one
// Character).
import FuzzSupport
@_spi(Internal) import LifecycleDaemon
import LifecycleSystemd

@main
enum SignalNameFuzzer: FuzzTarget {
    static func test(_ bytes: [UInt8]) {
        let text = text(bytes)
        for line in splitLines(text).map(String.init) {
            if let signal = UnixSignal(name: line) {
                check(
                    signal.rawValue >= 1 && signal.rawValue <= UnixSignal.realTimeMax,
                    "\(line.debugDescription) is \(signal.rawValue)"
                )
                check(
                    UnixSignal(name: signal.name) == signal,
                    "\(signal.name), the name of \(line.debugDescription), reads back otherwise"
                )
            }
            if let (signal, action) = try? SignalMap.parseEntry(line) {
                check(!signal.isUncatchable, "\(line.debugDescription) maps \(signal.name)")
                var map = SignalMap.standard
                map.set(signal, to: action)
                check(
                    map.requests[signal] == action,
                    "\(line.debugDescription) did not set \(signal.name)"
                )
            }
        }
        // The same lines as a [Signals] section.
        var configuration = DaemonConfiguration()
        do throws(ConfigurationError) {
            try configuration.apply(text: "[Signals]\n" + text, source: "fuzz.conf")
        } catch {
            check(!error.message.isEmpty, "an error without a message")
            return
        }
        check(configuration.signalMap.signals.allSatisfy { !$0.isUncatchable }, "SIGKILL or SIGSTOP was mapped")
    }
}
