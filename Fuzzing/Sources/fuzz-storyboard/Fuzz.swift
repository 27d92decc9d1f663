//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// Storyboards: text → StoryboardFormat.parse, as the daemon reads --storyboard / [Launch] Storyboard= at launch and
// on every reload.
import FuzzSupport
@_spi(Internal) import LifecycleKit

@main
enum StoryboardFuzzer: FuzzTarget {
    static func test(_ bytes: [UInt8]) {
        let text = text(bytes)
        let archive: Archive
        do throws(ArchiveError) {
            archive = try StoryboardFormat.parse(text, source: "fuzz.storyboard")
        } catch {
            check(error.location != nil, "a storyboard error without a place: \(error)")
            return
        }
        checkStoryboard(archive)
    }
}
