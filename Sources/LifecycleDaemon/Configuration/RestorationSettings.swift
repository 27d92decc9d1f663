//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

public import LifecycleKit

/// The configuration of state restoration and storyboards: `[Launch] Storyboard=`, `[State]`, and the debug switch
/// that slows the state's write down.
@_spi(Internal) public struct RestorationSettings: Sendable, Hashable {
    /// The storyboard the tree is loaded from at launch and re-applied from on reload (`--storyboard`,
    /// `[Launch] Storyboard=`); nil: the delegate builds the tree.
    @_spi(Internal) public var storyboard: String?
    /// Where the saved state is written (`--state-directory`, `[State] Directory=`); nil: `$STATE_DIRECTORY` (the
    /// unit's `StateDirectory=`), else nowhere on disk.
    @_spi(Internal) public var stateDirectory: String?
    /// How many rejected (corrupt, truncated, unreadable) state files are kept aside (`[State] KeepRejected=`).
    @_spi(Internal) public var keepRejectedFiles = 3
    /// Whether the state also goes to systemd's file descriptor store (`[State] FileDescriptorStore=`).
    @_spi(Internal) public var fileDescriptorStore = FileDescriptorStoreUse.auto
    /// A test's switch (`LIFECYCLE_STATE_WRITE_DELAY_MS`): how long writing the state file takes at least, spread over
    /// its chunks, so the crash test can kill the daemon in the middle of a write.
    @_spi(Internal) public var stateWriteDelay = Duration.zero

    /// The causes of the last run's end after which the saved state is discarded (set aside as discarded, not
    /// restored): `[Restoration] DiscardAfter=` (docs/restoration.md, "A policy per cause").
    @_spi(Internal) public var discardAfter: Set<RunEnd.Cause> = [.terminate]
    /// How many abnormal ends in a row, each within ``safeLaunchWithin`` of a launch that restored the same
    /// generation, set that generation aside (`[Restoration] SafeLaunchAfter=`; 0: only a crash during launch does).
    @_spi(Internal) public var safeLaunchAfter = 2
    /// `[Restoration] SafeLaunchWithinSec=`.
    @_spi(Internal) public var safeLaunchWithin = Duration.seconds(60)
    /// A clean stop followed by a start within this is a restart (`[Restoration] RestartGapSec=`).
    @_spi(Internal) public var restartGap = Duration.seconds(2)
    /// The wait before the launch after the second abnormal end in a row, doubled for each one after
    /// (`[Restoration] BackoffSec=`; 0: none).
    @_spi(Internal) public var backoffInitial = Duration.seconds(1)
    /// The longest wait (`[Restoration] BackoffMaxSec=`).
    @_spi(Internal) public var backoffMaximum = Duration.seconds(30)
    /// After this many abnormal ends in a row the process gives up, exit status 69 (`[Restoration] GiveUpAfter=`; 0:
    /// never).
    @_spi(Internal) public var giveUpAfter = 6
    /// A generation set aside to restore on purpose at the next launch (`[Restoration] RestoreSetAside=`): a number,
    /// or `newest`; nil: none.
    @_spi(Internal) public var restoreSetAside: SetAsideChoice?

    /// The defaults.
    @_spi(Internal) public init() {}
}

/// Which generation set aside `[Restoration] RestoreSetAside=` restores.
@_spi(Internal) public enum SetAsideChoice: Sendable, Hashable {
    /// The newest one set aside.
    case newest
    /// This generation.
    case generation(Int)
}

/// When the saved state goes to systemd's file descriptor store.
@_spi(Internal) public enum FileDescriptorStoreUse: String, Sendable, Hashable, CaseIterable {
    /// Under systemd (a notification socket), unless `$FDSTORE` (systemd 254 and later) says the store holds nothing.
    case auto
    /// Whenever there is a notification socket.
    case yes
    /// Never.
    case no
}

extension DaemonConfiguration {
    /// `[State]`.
    static let stateKeys: [ConfigurationKey<DaemonConfiguration>] = [
        .text("Directory", \.restoration.stateDirectory),
        .integer("KeepRejected", \.restoration.keepRejectedFiles, in: 0...100),
        .choice("FileDescriptorStore", \.restoration.fileDescriptorStore, what: "a file descriptor store setting"),
    ]

    /// `[Restoration]`.
    static let restorationKeys: [ConfigurationKey<DaemonConfiguration>] = [
        ConfigurationKey("DiscardAfter") { configuration, value throws(ConfigurationValueError) in
            configuration.restoration.discardAfter = try parseCauses(value)
        },
        .integer("SafeLaunchAfter", \.restoration.safeLaunchAfter, in: 0...100),
        .duration("SafeLaunchWithinSec", \.restoration.safeLaunchWithin),
        .duration("RestartGapSec", \.restoration.restartGap),
        .duration("BackoffSec", \.restoration.backoffInitial),
        .duration("BackoffMaxSec", \.restoration.backoffMaximum),
        .integer("GiveUpAfter", \.restoration.giveUpAfter, in: 0...1000),
        ConfigurationKey("RestoreSetAside") { configuration, value throws(ConfigurationValueError) in
            if value.isEmpty {
                configuration.restoration.restoreSetAside = nil
            } else if value == "newest" {
                configuration.restoration.restoreSetAside = .newest
            } else if let generation = Int(value), generation >= 0 {
                configuration.restoration.restoreSetAside = .generation(generation)
            } else {
                throw ConfigurationValueError(
                    "RestoreSetAside=\(value) is not a generation; use a whole number from 0 (a generation set aside, as "
                        + "the journal and lifecyclectl status name it), newest, or nothing"
                )
            }
        },
    ]

    /// The causes `DiscardAfter=` may name: every cause but `upgrade`, whose hand-over always restores.
    static let discardableCauses = RunEnd.Cause.allCases.filter { $0 != .upgrade }

    /// `DiscardAfter=stop terminate`: causes separated by spaces (or nothing: always restore).
    static func parseCauses(_ value: String) throws(ConfigurationValueError) -> Set<RunEnd.Cause> {
        var causes: Set<RunEnd.Cause> = []
        for word in value.split(whereSeparator: { $0 == " " || $0 == "," }) {
            guard let cause = RunEnd.Cause(rawValue: String(word)), cause != .upgrade else {
                let why = word == "upgrade" ? " (an upgrade's hand-over always restores)" : ""
                throw ConfigurationValueError(
                    "DiscardAfter= names \"\(word)\", which is not a cause it takes\(why); valid: "
                        + discardableCauses.map(\.rawValue).joined(separator: ", ") + ", separated by spaces, or nothing"
                )
            }
            causes.insert(cause)
        }
        return causes
    }

    /// `[Launch] Storyboard=`.
    static let storyboardKey = ConfigurationKey<DaemonConfiguration>.text("Storyboard", \.restoration.storyboard)
}
