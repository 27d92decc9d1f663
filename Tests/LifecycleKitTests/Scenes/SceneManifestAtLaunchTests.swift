//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) @testable import LifecycleKit
import LifecycleKitTesting
import Testing

/// A delegate whose configuration, handed over after the application is made, decides whether it uses scenes.
@MainActor
private final class ConfiguredDelegate: ApplicationDelegate {
    var usesScenes = false
    var sceneManifest: SceneManifest? { usesScenes ? SceneManifest(launchSceneRole: .windowApplication) : nil }
}

/// The manifest is read when the launch is asked for, so a daemon's configuration can choose it.
@MainActor
@Suite("Scenes: the manifest a configuration chooses")
struct SceneManifestAtLaunchTests {
    @Test func aManifestGivenAfterTheApplicationIsMadeIsAdoptedAtLaunch() {
        let delegate = ConfiguredDelegate()
        let host = TestHost(delegate: delegate)
        #expect(!host.application.usesScenes)
        delegate.usesScenes = true
        host.launch()
        #expect(host.application.usesScenes)
        #expect(host.application.connectedScenes.count == 1)
        #expect(host.application.applicationState == .active)
    }

    @Test func aManifestWithdrawnAfterTheLaunchChangesNothing() {
        let delegate = ConfiguredDelegate()
        delegate.usesScenes = true
        let host = TestHost(delegate: delegate)
        host.launch()
        delegate.usesScenes = false
        #expect(host.application.usesScenes)
        #expect(host.application.connectedScenes.count == 1)
    }

    @Test func withoutAManifestAtLaunchTheApplicationKeepsItsOneWindow() {
        let delegate = ConfiguredDelegate()
        let host = TestHost(delegate: delegate)
        host.launch()
        #expect(!host.application.usesScenes)
        #expect(host.application.connectedScenes.isEmpty)
    }
}
