//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// Makes controllers (and their declared views) from archive nodes: `init(coder:)` for each, named by where it is
/// going, wired as the archive says; then `awakeFromArchive()` pre-order once everything is wired, then the
/// presentations (presenting loads a view, which comes after `awakeFromArchive` in the contract's §3).
@MainActor
struct ArchiveInstantiation {
    let source: String
    let registry: ArchiveClassRegistry
    let application: Application?
    let requiringEveryProperty: Bool
    /// Every controller made, pre-order.
    private(set) var made: [ViewController] = []
    /// Presentations to make once the tree is awake: (presenter, presented).
    private var presentations: [(ViewController, ViewController)] = []

    init(source: String, registry: ArchiveClassRegistry, application: Application?, requiringEveryProperty: Bool) {
        self.source = source
        self.registry = registry
        self.application = application
        self.requiringEveryProperty = requiringEveryProperty
    }

    /// The path a node's controller will have under `parentPath` (nil: it is a root).
    static func path(of node: Archive.Node, type: ViewController.Type?, under parentPath: String?) -> String {
        let name =
            node.identifier
            ?? type.map { String.defaultNodeName(for: $0, strippingSuffixes: ["ViewController", "Controller"], fallback: "controller") }
            ?? node.className
        return parentPath.map { $0 + "/" + name } ?? name
    }

    /// Makes one controller without its children or presentation: `init(coder:)`, its restoration identifier,
    /// presentation style and declared views.
    mutating func makeController(_ node: Archive.Node, path: String) throws(ArchiveError) -> ViewController {
        guard let type = registry.type(named: node.className) else {
            throw ArchiveError(
                source: source,
                reason: "\(path) names class \"\(node.className)\", which is not registered; registered: "
                    + registry.names.joined(separator: ", "),
                location: node.origin.location
            )
        }
        let reads = CoderReads()
        let coder = Coder(node: node, application: application, destinationPath: path, reads: reads)
        let controller: ViewController
        do {
            controller = try type.init(coder: coder)
        } catch let error as ArchiveError {
            throw ArchiveError(
                source: source,
                reason: "\(path) (\(node.className)): \(error.reason)",
                location: error.property.flatMap { node.origin.propertyLocations[$0] } ?? node.origin.location,
                property: error.property
            )
        } catch {
            throw ArchiveError(source: source, reason: "\(path) (\(node.className)) failed to decode: \(error)", location: node.origin.location)
        }
        if requiringEveryProperty {
            try checkEveryPropertyRead(node.properties, reads: reads, what: "\(path) (\(node.className))", origin: node.origin)
        }
        if let restorationIdentifier = node.restorationIdentifier { controller.restorationIdentifier = restorationIdentifier }
        if let style = node.modalPresentationStyle { controller.modalPresentationStyle = style }
        if !node.views.isEmpty {
            controller.archivedSubviews = try makeViews(node.views, under: path + ".view")
            let nodes = node.views
            let registry = registry
            let source = source
            controller.archivedSubviewFactory = {
                var again = ArchiveInstantiation(source: source, registry: registry, application: nil, requiringEveryProperty: false)
                return (try? again.makeViews(nodes, under: "")) ?? []
            }
        }
        made.append(controller)
        return controller
    }

    /// Makes a node's whole subtree, wired: children added (a navigation controller's become its stack, a plain
    /// container embeds theirs when its view loads); its presentation is recorded for ``finish()``.
    mutating func make(_ node: Archive.Node, parentPath: String?) throws(ArchiveError) -> ViewController {
        let path = Self.path(of: node, type: registry.type(named: node.className), under: parentPath)
        let controller = try makeController(node, path: path)
        try checkUniqueNames(of: node, at: path)
        for child in node.children {
            let childController = try make(child, parentPath: path)
            controller.addChild(childController)
            childController.notifyDidMove(toParent: controller)
        }
        controller.embedsChildViewsOnLoad = !(controller is NavigationController)
        if let presented = node.presented {
            let presentedController = try make(presented, parentPath: path)
            presentations.append((controller, presentedController))
        }
        return controller
    }

    /// `awakeFromArchive()` on every controller made, pre-order; then the presentations.
    mutating func finish() {
        for controller in made {
            controller.trace(TraceEventName.awakeFromArchive)
            controller.awakeFromArchive()
        }
        for (presenter, presented) in presentations {
            presenter.present(presented, animated: false)
        }
        presentations.removeAll()
    }

    /// Makes declared views (and their subviews) through the registry's factories.
    mutating func makeViews(_ nodes: [Archive.ViewNode], under parentPath: String) throws(ArchiveError) -> [View] {
        var views: [View] = []
        var seen: [String: SourceLocation?] = [:]
        for node in nodes {
            let name = node.name ?? node.className
            let path = parentPath + "/" + name
            if let first = seen[name] {
                throw ArchiveError(
                    source: source,
                    reason: "two views are named \(name) under \(parentPath)"
                        + (first.map { " (the first at \($0))" } ?? "") + "; give each its own name",
                    location: node.origin.location
                )
            }
            seen[name] = node.origin.location
            guard let factory = registry.viewFactory(named: node.className) else {
                throw ArchiveError(
                    source: source,
                    reason: "\(path) names view class \"\(node.className)\", which is not registered; registered views: "
                        + registry.viewNames.joined(separator: ", "),
                    location: node.origin.location
                )
            }
            let reads = CoderReads()
            let view: View
            do {
                view = try factory(Coder(view: node, reads: reads))
            } catch {
                throw ArchiveError(
                    source: source,
                    reason: "\(path) (\(node.className)): \(error.reason)",
                    location: error.property.flatMap { node.origin.propertyLocations[$0] } ?? node.origin.location,
                    property: error.property
                )
            }
            if requiringEveryProperty {
                try checkEveryPropertyRead(node.properties, reads: reads, what: "\(path) (\(node.className))", origin: node.origin)
            }
            if let name = node.name { view.name = name }
            for subview in try makeViews(node.subviews, under: path) { view.addSubview(subview) }
            views.append(view)
        }
        return views
    }

    private func checkEveryPropertyRead(
        _ properties: [String: String],
        reads: CoderReads,
        what: String,
        origin: SourceOrigin
    ) throws(ArchiveError) {
        let read = reads.all
        let unread = properties.keys.filter { !read.contains($0) }
        // The first one written is the one reported.
        guard
            let key = unread.min(by: {
                (origin.propertyLocations[$0] ?? SourceLocation(line: .max, column: 0))
                    < (origin.propertyLocations[$1] ?? SourceLocation(line: .max, column: 0))
            })
        else { return }
        let valid = read.isEmpty ? "it reads no properties" : "it reads: " + read.sorted().joined(separator: ", ")
        throw ArchiveError(
            source: source,
            reason: "\(what) does not read a property \"\(key)\"; \(valid)",
            location: origin.propertyLocations[key] ?? origin.location,
            property: key
        )
    }

    private func checkUniqueNames(of node: Archive.Node, at path: String) throws(ArchiveError) {
        var seen: [String: SourceLocation?] = [:]
        let below = node.children + (node.presented.map { [$0] } ?? [])
        for child in below {
            let name = Self.path(of: child, type: registry.type(named: child.className), under: nil)
            if let first = seen[name] {
                throw ArchiveError(
                    source: source,
                    reason: "two controllers under \(path) are named \(name)" + (first.map { " (the first at \($0))" } ?? "")
                        + "; give each its own identifier",
                    location: child.origin.location
                )
            }
            seen[name] = child.origin.location
        }
    }
}
