//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Testing

@testable import LifecycleSystemd

#if canImport(Glibc)
import Glibc
#endif

@Suite struct UnixSignalTests {
    @Test func standardNamesParseInEveryAcceptedSpellingAndRoundTrip() throws {
        for spelling in ["SIGUSR1", "USR1", "usr1", "sigusr1"] {
            #expect(UnixSignal(name: spelling) == .user1)
        }
        for number in [SIGHUP, SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGTSTP, SIGCONT, SIGWINCH, SIGPWR] {
            let signal = UnixSignal(rawValue: number)
            #expect(UnixSignal(name: signal.name) == signal)
        }
        #expect(UnixSignal.terminalStop.name == "SIGTSTP")
        #expect("\(UnixSignal.hangup)" == "SIGHUP")
    }

    @Test func realTimeSignalsAreNamedFromRTMINAndRoundTrip() throws {
        let memoryWarning = try #require(UnixSignal(name: "SIGRTMIN+2"))
        #expect(memoryWarning.rawValue == UnixSignal.realTimeMin + 2)
        #expect(memoryWarning == .memoryWarning)
        #expect(memoryWarning.name == "SIGRTMIN+2")
        #expect(UnixSignal(name: "rtmin")?.name == "SIGRTMIN")
        let nearTop = try #require(UnixSignal(name: "SIGRTMAX-1"))
        #expect(nearTop.rawValue == UnixSignal.realTimeMax - 1)
        #expect(UnixSignal(name: nearTop.name) == nearTop)
        for number in UnixSignal.realTimeMin...UnixSignal.realTimeMax {
            let signal = UnixSignal(rawValue: number)
            #expect(UnixSignal(name: signal.name) == signal)
        }
    }

    @Test func unknownAndOutOfRangeNamesAreRejected() {
        for name in ["SIGFOO", "RTMIN+99", "SIGRTMAX+1", "SIGRTMIN-1", "SIGRTMIN+", "SIGRTMIN+x", "", "SIG"] {
            #expect(UnixSignal(name: name) == nil, "\(name) should not parse")
        }
    }

    /// Fuzzing finding (fuzz-signal-name, Fuzzing/Corpus/signal-name/finding-rtmin-overflow): an offset near Int32.max
    /// overflowed `SIGRTMIN + offset` and trapped; offsets take digits only.
    @Test func offsetsPastTheRangeAreRejectedNotOverflowed() {
        for name in [
            "RTMIN+2147483647", "SIGRTMIN+2147483647", "SIGRTMIN+2147483614", "SIGRTMIN+2147483648", "SIGRTMAX-2147483647",
            "SIGRTMAX-2147483648", "SIGRTMIN+99999999999999999999", "SIGRTMIN++2", "SIGRTMAX--1", "SIGRTMIN+-0", "SIGRTMIN+ 2",
        ] {
            #expect(UnixSignal(name: name) == nil, "\(name) should not parse")
        }
        #expect(UnixSignal(name: "SIGRTMIN+002")?.name == "SIGRTMIN+2")
    }

    @Test func onlyKillAndStopAreUncatchable() {
        #expect(UnixSignal(name: "SIGKILL")?.isUncatchable == true)
        #expect(UnixSignal(name: "SIGSTOP")?.isUncatchable == true)
        #expect(UnixSignal.terminalStop.isUncatchable == false)
    }
}
