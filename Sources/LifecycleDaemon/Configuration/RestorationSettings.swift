//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//


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

    /// The defaults.
    @_spi(Internal) public init() {}
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

    /// `[Launch] Storyboard=`.
    static let storyboardKey = ConfigurationKey<DaemonConfiguration>.text("Storyboard", \.restoration.storyboard)
}
