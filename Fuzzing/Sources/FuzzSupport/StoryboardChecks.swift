//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) import LifecycleKit

/// What must hold of any tree `StoryboardFormat.parse` accepted: nesting within ``StoryboardFormat/maximumDepth``,
/// every node placed in the file, names and classes as the format allows, no two siblings of one name; and the tree
/// survives a saved state's format (written and read back the same).
package func checkStoryboard(_ archive: Archive) {
    func checkClass(_ name: String) {
        check(
            name.first.map { $0.isLetter || $0 == "_" } == true
                && name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "." },
            "\(name.debugDescription) was accepted as a class"
        )
    }
    func checkName(_ name: String?) {
        guard let name else { return }
        check(
            !name.isEmpty && name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" },
            "\(name.debugDescription) was accepted as a name"
        )
    }
    func checkView(_ view: Archive.ViewNode, depth: Int) {
        check(depth <= StoryboardFormat.maximumDepth, "views nest \(depth) deep")
        check(view.origin.location != nil, "a view without a place in the file")
        checkClass(view.className)
        checkName(view.name)
        let names = view.subviews.map { $0.name ?? $0.className }
        check(Set(names).count == names.count, "two subviews of one name: \(names)")
        for subview in view.subviews { checkView(subview, depth: depth + 1) }
    }
    func checkNode(_ node: Archive.Node, depth: Int) {
        check(depth <= StoryboardFormat.maximumDepth, "controllers nest \(depth) deep")
        check(node.origin.location != nil, "a controller without a place in the file")
        checkClass(node.className)
        checkName(node.identifier)
        checkName(node.restorationIdentifier)
        for key in node.properties.keys {
            check(node.origin.propertyLocations[key] != nil, "property \(key) without a place in the file")
        }
        let named = (node.children + (node.presented.map { [$0] } ?? [])).compactMap(\.identifier)
        check(Set(named).count == named.count, "two controllers of one name under one: \(named)")
        let views = node.views.map { $0.name ?? $0.className }
        check(Set(views).count == views.count, "two views of one name: \(views)")
        for view in node.views { checkView(view, depth: depth + 1) }
        for child in node.children { checkNode(child, depth: depth + 1) }
        if let presented = node.presented { checkNode(presented, depth: depth + 1) }
    }
    checkNode(archive.root, depth: 1)
    checkStateRoundTrip(archive, from: [])
}
