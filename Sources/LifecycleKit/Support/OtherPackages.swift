//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// What the repository's other packages (Benchmarks/, Fuzzing/) reach of LifecycleKit's package-wide declarations:
/// SPI, for SwiftPM lets another package see nothing finer than `public`. Within this package, modules call the
/// `package` declarations these forward to, without an SPI import. Not an API: it changes with the package.
@_spi(Internal) public enum PackageInternals {
    /// ``Application/runEndOfTurn()``: what a host runs at the end of every main-loop turn.
    @MainActor
    public static func runEndOfTurn(_ application: Application) {
        application.runEndOfTurn()
    }

    /// ``Application/scheduleTurnEndWork(_:)``: runs `work` at the end of the current turn.
    @MainActor
    public static func scheduleTurnEndWork(_ application: Application, _ work: @escaping @MainActor () -> Void) {
        application.scheduleTurnEndWork(work)
    }
}
