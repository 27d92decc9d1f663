//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import FoundationEssentials
import Synchronization

/// A place in a text file: line and column, both from 1 (the column counts characters).
@_spi(Internal) public struct SourceLocation: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The line, from 1.
    @_spi(Internal) public var line: Int
    /// The column, from 1, in characters.
    @_spi(Internal) public var column: Int

    /// Creates a location.
    @_spi(Internal) public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    @_spi(Internal) public var description: String { "\(line):\(column)" }

    @_spi(Internal) public static func < (lhs: SourceLocation, rhs: SourceLocation) -> Bool {
        (lhs.line, lhs.column) < (rhs.line, rhs.column)
    }
}

/// Where a node and its properties were written (a storyboard's nodes have one, a saved state's none).
///
/// Not part of a node's value: two nodes that differ only in where they were written are equal, so a storyboard
/// whose lines moved (a comment added) is not a changed storyboard.
@_spi(Internal) public struct SourceOrigin: Sendable, Hashable {
    /// Where the node starts.
    @_spi(Internal) public var location: SourceLocation?
    /// Where each property's value starts, by key.
    @_spi(Internal) public var propertyLocations: [String: SourceLocation]

    /// Creates an origin.
    @_spi(Internal) public init(location: SourceLocation? = nil, propertyLocations: [String: SourceLocation] = [:]) {
        self.location = location
        self.propertyLocations = propertyLocations
    }

    @_spi(Internal) public static func == (lhs: SourceOrigin, rhs: SourceOrigin) -> Bool { true }
    @_spi(Internal) public func hash(into hasher: inout Hasher) {}
}

extension ModalPresentationStyle: Codable {}

/// A decoded archive of a controller tree: a storyboard (the tree declared in a file), a saved state (the shape of
/// the tree and each preserved controller's values), or the JSON tree archive of format 1.
///
/// Format 1, a bare JSON tree, is still read; saved states use the framed format 2 (docs/restoration.md):
///
/// ```json
/// {"class": "NavigationController", "identifier": "modes",
///  "children": [{"class": "ServingController", "identifier": "serving", "properties": {"port": "8080"}}]}
/// ```
public struct Archive: Sendable, Hashable {
    /// The format saved states are written in.
    @_spi(Internal) public static let currentFormatVersion = 2

    /// A view declared under a controller (storyboards): added to the controller's root view when it loads, before
    /// `viewDidLoad`.
    @_spi(Internal) public struct ViewNode: Codable, Sendable, Hashable {
        /// The registered view class (``ArchiveClassRegistry/registerView(_:make:)``).
        @_spi(Internal) public var className: String
        /// Its name in trace paths.
        @_spi(Internal) public var name: String?
        /// Values its factory reads.
        @_spi(Internal) public var properties: [String: String]
        /// Its subviews, back to front.
        @_spi(Internal) public var subviews: [ViewNode]
        /// Where it was written.
        @_spi(Internal) public var origin: SourceOrigin

        enum CodingKeys: String, CodingKey {
            case className = "class"
            case name, properties, subviews
        }

        /// Creates a view node.
        @_spi(Internal) public init(
            className: String,
            name: String? = nil,
            properties: [String: String] = [:],
            subviews: [ViewNode] = [],
            origin: SourceOrigin = SourceOrigin()
        ) {
            self.className = className
            self.name = name
            self.properties = properties
            self.subviews = subviews
            self.origin = origin
        }

        @_spi(Internal) public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            className = try container.decode(String.self, forKey: .className)
            name = try container.decodeIfPresent(String.self, forKey: .name)
            properties = try container.decodeIfPresent([String: String].self, forKey: .properties) ?? [:]
            subviews = try container.decodeIfPresent([ViewNode].self, forKey: .subviews) ?? []
            origin = SourceOrigin()
        }

        @_spi(Internal) public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(className, forKey: .className)
            try container.encodeIfPresent(name, forKey: .name)
            if !properties.isEmpty { try container.encode(properties, forKey: .properties) }
            if !subviews.isEmpty { try container.encode(subviews, forKey: .subviews) }
        }
    }

    /// One controller of the tree.
    @_spi(Internal) public struct Node: Codable, Sendable, Hashable {
        /// The registered class name to instantiate.
        @_spi(Internal) public var className: String
        /// The node's identifier in trace paths.
        @_spi(Internal) public var identifier: String?
        /// The controller's restoration identifier: it opted in to state preservation.
        @_spi(Internal) public var restorationIdentifier: String?
        /// Values the class reads in `init(coder:)` (a storyboard's properties), as written.
        @_spi(Internal) public var properties: [String: String]
        /// The values its `encodeRestorableState(with:)` wrote (saved states).
        @_spi(Internal) public var state: [String: StateValue]
        /// The version of those values (its class's ``ViewController/restorableStateVersion`` when saved); nil: 1.
        @_spi(Internal) public var stateVersion: Int?
        /// Child controllers (a navigation controller's stack, bottom first).
        @_spi(Internal) public var children: [Node]
        /// How it is shown when presented.
        @_spi(Internal) public var modalPresentationStyle: ModalPresentationStyle?
        /// Views under its root view (storyboards).
        @_spi(Internal) public var views: [ViewNode]
        /// Where it was written.
        @_spi(Internal) public var origin: SourceOrigin
        // At most one: a value type cannot hold itself directly.
        private var presentedStorage: [Node]

        /// The controller this one presents.
        @_spi(Internal) public var presented: Node? {
            get { presentedStorage.first }
            set { presentedStorage = newValue.map { [$0] } ?? [] }
        }

        enum CodingKeys: String, CodingKey {
            case className = "class"
            case identifier, restorationIdentifier, properties, state, children, presented
            case modalPresentationStyle = "style"
            case stateVersion = "version"
            case views
        }

        /// Creates a node.
        @_spi(Internal) public init(
            className: String,
            identifier: String? = nil,
            restorationIdentifier: String? = nil,
            properties: [String: String] = [:],
            state: [String: StateValue] = [:],
            children: [Node] = [],
            presented: Node? = nil,
            modalPresentationStyle: ModalPresentationStyle? = nil,
            views: [ViewNode] = [],
            origin: SourceOrigin = SourceOrigin()
        ) {
            self.className = className
            self.identifier = identifier
            self.restorationIdentifier = restorationIdentifier
            self.properties = properties
            self.state = state
            self.children = children
            self.presentedStorage = presented.map { [$0] } ?? []
            self.modalPresentationStyle = modalPresentationStyle
            self.views = views
            self.origin = origin
        }

        /// Decodes a node; everything but the class may be absent.
        @_spi(Internal) public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            className = try container.decode(String.self, forKey: .className)
            identifier = try container.decodeIfPresent(String.self, forKey: .identifier)
            restorationIdentifier = try container.decodeIfPresent(String.self, forKey: .restorationIdentifier)
            properties = try container.decodeIfPresent([String: String].self, forKey: .properties) ?? [:]
            state = try container.decodeIfPresent([String: StateValue].self, forKey: .state) ?? [:]
            children = try container.decodeIfPresent([Node].self, forKey: .children) ?? []
            presentedStorage = try container.decodeIfPresent(Node.self, forKey: .presented).map { [$0] } ?? []
            modalPresentationStyle = try container.decodeIfPresent(ModalPresentationStyle.self, forKey: .modalPresentationStyle)
            views = try container.decodeIfPresent([ViewNode].self, forKey: .views) ?? []
            stateVersion = try container.decodeIfPresent(Int.self, forKey: .stateVersion)
            origin = SourceOrigin()
        }

        @_spi(Internal) public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(className, forKey: .className)
            try container.encodeIfPresent(identifier, forKey: .identifier)
            try container.encodeIfPresent(restorationIdentifier, forKey: .restorationIdentifier)
            if !properties.isEmpty { try container.encode(properties, forKey: .properties) }
            if !state.isEmpty { try container.encode(state, forKey: .state) }
            if !children.isEmpty { try container.encode(children, forKey: .children) }
            try container.encodeIfPresent(presented, forKey: .presented)
            try container.encodeIfPresent(modalPresentationStyle, forKey: .modalPresentationStyle)
            if !views.isEmpty { try container.encode(views, forKey: .views) }
            try container.encodeIfPresent(stateVersion, forKey: .stateVersion)
        }

        /// The node without its children and what it presents: what the node itself is (its class, identifiers,
        /// properties, state, style and views).
        var ownContent: Node {
            var own = self
            own.children = []
            own.presented = nil
            return own
        }

        /// Every node of the subtree, pre-order (itself, its children, what it presents).
        package func preOrder() -> [Node] {
            var list: [Node] = []
            appendPreOrder(to: &list)
            return list
        }

        private func appendPreOrder(to list: inout [Node]) {
            list.append(self)
            for child in children { child.appendPreOrder(to: &list) }
            presented?.appendPreOrder(to: &list)
        }
    }

    /// The root node (a placeholder of no class when the archive has none: ``hasRoot``).
    @_spi(Internal) public var root: Node {
        get { rootNode ?? Node(className: "") }
        set { rootNode = newValue }
    }
    /// The root node, nil for a saved state of an application that uses scenes and has no window of its own.
    package var rootNode: Node?
    /// Whether the archive has a tree of its own (a saved state may hold scene sessions alone).
    package var hasRoot: Bool { rootNode != nil }
    /// Saved states of an application that uses scenes: its sessions, in the order they were made.
    @_spi(Internal) public var sessions: [Session] = []
    /// The file the archive came from, for error messages.
    @_spi(Internal) public var sourceName = "archive"
    /// The format it was read from (1: a bare JSON tree, migrated; 2: a saved state); what it is written in is
    /// always the current one, 2.
    public var formatVersion = Archive.currentFormatVersion
    /// The saved state's file in a state directory.
    package static let stateFileName = "state.archive"
    /// Saved states: counts the saves of this service, +1 each; the newest of two copies has the higher one.
    public var generation = 0
    /// Saved states: the version of the program that wrote it (its `--version`), when it said.
    public var writerVersion: String?
    /// Saved states: the build id of the program that wrote it (the ELF's GNU build id, in hex), when known.
    public var writerBuildID: String?
    /// Saved states: when it was written, in microseconds since the Unix epoch.
    @_spi(Internal) public var savedAt: Int64?
    /// Saved states: the values the delegate wrote in `application(_:willEncodeRestorableStateWith:)`.
    @_spi(Internal) public var applicationState: [String: StateValue] = [:]

    /// Wraps a root node.
    @_spi(Internal) public init(root: Node, sourceName: String = "archive") {
        self.rootNode = root
        self.sourceName = sourceName
    }

    /// An archive of scene sessions alone, with no tree of its own (``hasRoot`` is false).
    package init(sessions: [Session], sourceName: String = "archive") {
        self.rootNode = nil
        self.sessions = sessions
        self.sourceName = sourceName
    }

    /// Parses a tree archive of format 1 from JSON bytes; `source` names the file in errors.
    @_spi(Internal) public init(json: [UInt8], source: String) throws(ArchiveError) {
        do {
            rootNode = try JSONDecoder().decode(Node.self, from: Data(json))
        } catch {
            throw ArchiveError(source: source, reason: "it is not a valid tree archive (\(error))")
        }
        sourceName = source
        formatVersion = 1
    }

    /// Builds the controller tree: each node's class is instantiated with `init(coder:)` (named by where it is
    /// going), children are added to their parent (a navigation controller's become its stack), then
    /// `awakeFromArchive()` runs on every controller, pre-order, once the whole tree is wired; presentations are made
    /// last.
    ///
    /// With an `application`, every decoded controller belongs to it from its `init(coder:)` on, so its events are
    /// traced as they happen; without one they are held until the tree joins an application's window. With
    /// `requiringEveryProperty` (storyboards), a property that no `init(coder:)` read is an error naming what the
    /// class does read.
    @MainActor
    package func decodeTree(
        using registry: ArchiveClassRegistry,
        for application: Application? = nil,
        requiringEveryProperty: Bool = false
    ) throws(ArchiveError) -> ViewController {
        var instantiation = ArchiveInstantiation(
            source: sourceName,
            registry: registry,
            application: application,
            requiringEveryProperty: requiringEveryProperty
        )
        let root = try instantiation.make(root, parentPath: nil)
        instantiation.finish()
        return root
    }
}

/// An archive that could not be read or decoded; the description names the file, where in it, and what is wrong.
public struct ArchiveError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file or archive name.
    public var source: String
    /// What is wrong, as a sentence fragment.
    public var reason: String
    /// Where in the file, when it has places (storyboards).
    @_spi(Internal) public var location: SourceLocation?
    /// The property whose value is wrong, when one is (thrown by ``Coder``).
    @_spi(Internal) public var property: String?

    /// An error in `source` (the archive's name), saying what is wrong and what would be valid.
    public init(source: String, reason: String) {
        self.init(source: source, reason: reason, location: nil)
    }

    /// An error at a place in the archive's text, about one property.
    @_spi(Internal) public init(source: String, reason: String, location: SourceLocation? = nil, property: String? = nil) {
        self.source = source
        self.reason = reason
        self.location = location
        self.property = property
    }

    public var description: String {
        if let location { return "\(source):\(location): \(reason)." }
        return "\(source): \(reason)."
    }
}

/// The keys a coder was asked for (storyboards: a property nobody read is a mistake).
final class CoderReads: Sendable {
    private let keys = Mutex<Set<String>>([])
    func insert(_ key: String) { keys.withLock { _ = $0.insert(key) } }
    var all: Set<String> { keys.withLock { $0 } }
}

/// The values of one archived controller or view, read in `init(coder:)` (or a registered view's factory): a
/// storyboard's properties as written, or the values a saved controller encoded.
public struct Coder: Sendable {
    /// The archived identifier (a view's name).
    public let identifier: String?
    /// The archived restoration identifier.
    public let restorationIdentifier: String?
    let properties: [String: String]
    let state: [String: StateValue]
    /// The application the decoded controller belongs to, if the archive is decoded for one.
    let application: Application?
    /// Where the controller is going in the tree: its first events are named by it.
    let destinationPath: String?
    let reads: CoderReads?

    init(
        node: Archive.Node,
        application: Application?,
        destinationPath: String? = nil,
        reads: CoderReads? = nil
    ) {
        identifier = node.identifier
        restorationIdentifier = node.restorationIdentifier
        properties = node.properties
        state = node.state
        self.application = application
        self.destinationPath = destinationPath
        self.reads = reads
    }

    init(view: Archive.ViewNode, reads: CoderReads?) {
        identifier = view.name
        restorationIdentifier = nil
        properties = view.properties
        state = [:]
        application = nil
        destinationPath = nil
        self.reads = reads
    }

    private func text(_ key: String) -> String? {
        reads?.insert(key)
        return properties[key]
    }

    private func stored(_ key: String) -> StateValue? {
        reads?.insert(key)
        return state[key]
    }

    private func mismatch(_ key: String, _ value: any CustomStringConvertible, _ expected: String) -> ArchiveError {
        ArchiveError(
            source: identifier ?? "archive",
            reason: "\(key) is \(value), not \(expected)",
            property: key
        )
    }

    /// Whether the archive has a value for `key`.
    public func containsValue(forKey key: String) -> Bool {
        reads?.insert(key)
        return properties[key] != nil || state[key] != nil
    }

    /// The string for `key`.
    public func decodeString(forKey key: String) -> String? {
        if let text = text(key) { return text }
        if case .string(let value) = stored(key) { return value }
        return nil
    }

    /// The integer for `key`; nil if absent; throws if present but not an integer.
    public func decodeInteger(forKey key: String) throws(ArchiveError) -> Int? {
        if let text = text(key) {
            guard let value = Int(text) else { throw mismatch(key, text.debugDescription, "a whole number") }
            return value
        }
        switch stored(key) {
        case nil: return nil
        case .integer(let value): return value
        case let other?: throw mismatch(key, other, "a whole number")
        }
    }

    /// The number for `key`; nil if absent; throws if present but not a number.
    public func decodeDouble(forKey key: String) throws(ArchiveError) -> Double? {
        if let text = text(key) {
            guard let value = Double(text), value.isFinite else { throw mismatch(key, text.debugDescription, "a number") }
            return value
        }
        switch stored(key) {
        case nil: return nil
        case .double(let value): return value
        case .integer(let value): return Double(value)
        case let other?: throw mismatch(key, other, "a number")
        }
    }

    /// The boolean for `key` (`true`/`false`, also `yes`/`no`); nil if absent; throws if present but not a boolean.
    public func decodeBool(forKey key: String) throws(ArchiveError) -> Bool? {
        if let text = text(key) {
            switch text {
            case "true", "yes": return true
            case "false", "no": return false
            default: throw mismatch(key, text.debugDescription, "true or false")
            }
        }
        switch stored(key) {
        case nil: return nil
        case .bool(let value): return value
        case let other?: throw mismatch(key, other, "true or false")
        }
    }

    /// The saved values of a controller being restored, as its `decodeRestorableState(with:)` will see them.
    public var restorableState: StateCoder { StateCoder(values: state, restorationPath: destinationPath ?? "") }
}

/// The controller (and view) classes an archive may name.
public struct ArchiveClassRegistry: Sendable {
    /// Makes a view from its archived values.
    public typealias ViewFactory = @MainActor @Sendable (Coder) throws(ArchiveError) -> View

    private var types: [String: ViewController.Type] = [
        "ViewController": ViewController.self,
        "NavigationController": NavigationController.self,
    ]
    private var namesByType: [ObjectIdentifier: String] = [
        ObjectIdentifier(ViewController.self): "ViewController",
        ObjectIdentifier(NavigationController.self): "NavigationController",
    ]
    private var viewFactories: [String: ViewFactory] = [
        "View": { coder in View(name: coder.identifier) }
    ]

    /// A registry knowing `ViewController`, `NavigationController` and `View`.
    public init() {}

    /// Registers a class under a name (by default its type name).
    public mutating func register(_ type: ViewController.Type, as name: String? = nil) {
        let name = name ?? String(describing: type)
        types[name] = type
        namesByType[ObjectIdentifier(type)] = name
    }

    /// Registers a view class: `make` builds one from its archived values (the view's name is
    /// ``Coder/identifier``).
    public mutating func registerView(_ name: String, make: @escaping ViewFactory) {
        viewFactories[name] = make
    }

    /// The class registered under `name`.
    package func type(named name: String) -> ViewController.Type? { types[name] }

    /// The name `type` is registered under; nil when it is not.
    package func name(of type: ViewController.Type) -> String? { namesByType[ObjectIdentifier(type)] }

    /// The view factory registered under `name`.
    package func viewFactory(named name: String) -> ViewFactory? { viewFactories[name] }

    /// Every registered controller class name, sorted.
    package var names: [String] { types.keys.sorted() }

    /// Every registered view class name, sorted.
    package var viewNames: [String] { viewFactories.keys.sorted() }

    /// This registry with every class of `other` added (`other` wins for a name both have).
    package func merging(_ other: ArchiveClassRegistry) -> ArchiveClassRegistry {
        var merged = self
        for (name, type) in other.types { merged.register(type, as: name) }
        for (name, factory) in other.viewFactories { merged.viewFactories[name] = factory }
        return merged
    }
}
