//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit

extension DaemonOptions {
    /// Why `configuration` cannot run an application that uses scenes, or nil: a storyboard (`--storyboard`, `[Launch]
    /// Storyboard=`) is loaded into the application's one window, and an application that uses scenes has none — each
    /// scene's delegate builds its scene's tree. Checked when the configuration is read: at start (exit 78) and on
    /// reload (refused), naming the option or the file and line.
    package func scenesProblem(in configuration: DaemonConfiguration, usesScenes: Bool) -> ConfigurationError? {
        guard usesScenes, let storyboard = configuration.restoration.storyboard else { return nil }
        let why = "the application uses scenes (its delegate returns a sceneManifest): each scene's delegate builds "
            + "its tree in scene(_:willConnectTo:options:), and there is no application window to load a storyboard into"
        if storyboardPath != nil {
            return ConfigurationError(
                source: "--storyboard",
                line: nil,
                message: "\(storyboard) cannot be used: \(why); run without --storyboard"
            )
        }
        // The flag was not given, so the file named it: the one resolveConfiguration read.
        let path = configurationPath ?? defaultConfigurationPath
        let line = (try? ConfigurationFile(contentsOf: path))?.entries.first {
            $0.section == "Launch" && $0.key == DaemonConfiguration.storyboardKey.name
        }?.line
        return ConfigurationError(
            source: path,
            line: line,
            message: "[Launch] Storyboard=\(storyboard) cannot be used: \(why); remove Storyboard= from [Launch]"
        )
    }
}
