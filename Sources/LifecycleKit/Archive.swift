import FoundationEssentials

/// A decoded archive of a controller tree: a declarative tree file or a saved state.
///
/// The format is JSON: each node names a registered class, an optional identifier, string properties and
/// children (for a navigation controller, its stack):
///
/// ```json
/// {"class": "NavigationController", "identifier": "modes",
///  "children": [{"class": "ServingController", "identifier": "serving", "properties": {"port": "8080"}}]}
/// ```
public struct Archive: Sendable, Hashable {
    /// One node of the tree.
    public struct Node: Codable, Sendable, Hashable {
        /// The registered class name to instantiate.
        public var className: String
        /// The node's identifier in trace paths.
        public var identifier: String?
        /// Values the class reads in `init(coder:)`.
        public var properties: [String: String]
        /// Child controllers (a navigation controller's stack, bottom first).
        public var children: [Node]

        enum CodingKeys: String, CodingKey {
            case className = "class"
            case identifier, properties, children
        }

        /// Creates a node.
        public init(className: String, identifier: String? = nil, properties: [String: String] = [:], children: [Node] = []) {
            self.className = className
            self.identifier = identifier
            self.properties = properties
            self.children = children
        }

        /// Decodes a node; properties and children may be absent.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            className = try container.decode(String.self, forKey: .className)
            identifier = try container.decodeIfPresent(String.self, forKey: .identifier)
            properties = try container.decodeIfPresent([String: String].self, forKey: .properties) ?? [:]
            children = try container.decodeIfPresent([Node].self, forKey: .children) ?? []
        }
    }

    /// The root node.
    public var root: Node

    /// Wraps a root node.
    public init(root: Node) {
        self.root = root
    }

    /// Parses an archive from JSON bytes; `source` names the file in errors.
    public init(json: [UInt8], source: String) throws(ArchiveError) {
        do {
            root = try JSONDecoder().decode(Node.self, from: Data(json))
        } catch {
            throw ArchiveError(source: source, reason: "it is not a valid tree archive (\(error))")
        }
        sourceName = source
    }

    /// The file the archive came from, for error messages.
    public var sourceName = "archive"

    /// Builds the controller tree: each node's class is instantiated with `init(coder:)`, children are added to
    /// their parent (a navigation controller's become its stack), then `awakeFromArchive()` runs on every
    /// controller, pre-order, once the whole tree is wired.
    ///
    /// With an `application`, every decoded controller belongs to it from its `init(coder:)` on, so its events are
    /// traced as they happen; without one they are held until the tree joins an application's window.
    @MainActor
    public func decodeTree(
        using registry: ArchiveClassRegistry,
        for application: Application? = nil
    ) throws(ArchiveError) -> ViewController {
        var decoded: [ViewController] = []
        let root = try decode(
            root,
            path: root.identifier ?? root.className,
            registry: registry,
            application: application,
            into: &decoded
        )
        for controller in decoded {
            controller.trace("awakeFromArchive")
            controller.awakeFromArchive()
        }
        return root
    }

    @MainActor
    private func decode(
        _ node: Node,
        path: String,
        registry: ArchiveClassRegistry,
        application: Application?,
        into decoded: inout [ViewController]
    ) throws(ArchiveError) -> ViewController {
        guard let type = registry.type(named: node.className) else {
            throw ArchiveError(
                source: sourceName,
                reason: "node \(path) names class \"\(node.className)\", which is not registered; registered: "
                    + registry.names.joined(separator: ", ")
            )
        }
        let controller: ViewController
        do {
            controller = try type.init(coder: Coder(node: node, application: application))
        } catch {
            throw ArchiveError(source: sourceName, reason: "node \(path) (\(node.className)) failed to decode: \(error)")
        }
        decoded.append(controller)
        for child in node.children {
            let childController = try decode(
                child,
                path: path + "/" + (child.identifier ?? child.className),
                registry: registry,
                application: application,
                into: &decoded
            )
            controller.addChild(childController)
            childController.notifyDidMove(toParent: controller)
        }
        controller.embedsChildViewsOnLoad = !(controller is NavigationController)
        return controller
    }
}

/// An archive that could not be read or decoded; the description names the file and what is wrong.
public struct ArchiveError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file or archive name.
    public var source: String
    /// What is wrong, as a sentence fragment.
    public var reason: String

    public var description: String { "\(source): \(reason)." }
}

/// The values of one archived controller, read in `init(coder:)`.
public struct Coder: Sendable {
    let node: Archive.Node
    /// The application the decoded controller belongs to, if the archive is decoded for one.
    let application: Application?

    /// The archived identifier.
    public var identifier: String? { node.identifier }

    /// Whether the archive has a value for `key`.
    public func containsValue(forKey key: String) -> Bool { node.properties[key] != nil }

    /// The string for `key`.
    public func decodeString(forKey key: String) -> String? { node.properties[key] }

    /// The integer for `key`; nil if absent; throws if present but not an integer.
    public func decodeInteger(forKey key: String) throws(ArchiveError) -> Int? {
        guard let text = node.properties[key] else { return nil }
        guard let value = Int(text) else {
            throw ArchiveError(source: node.identifier ?? node.className, reason: "\(key) is \"\(text)\", not an integer")
        }
        return value
    }

    /// The boolean for `key` (`true`/`false`); nil if absent; throws if present but not a boolean.
    public func decodeBool(forKey key: String) throws(ArchiveError) -> Bool? {
        guard let text = node.properties[key] else { return nil }
        switch text {
        case "true": return true
        case "false": return false
        default:
            throw ArchiveError(source: node.identifier ?? node.className, reason: "\(key) is \"\(text)\", not true or false")
        }
    }
}

/// The controller classes an archive may name.
public struct ArchiveClassRegistry: Sendable {
    private var types: [String: ViewController.Type] = [
        "ViewController": ViewController.self,
        "NavigationController": NavigationController.self,
    ]

    /// A registry knowing `ViewController` and `NavigationController`.
    public init() {}

    /// Registers a class under a name (by default its type name).
    public mutating func register(_ type: ViewController.Type, as name: String? = nil) {
        types[name ?? String(describing: type)] = type
    }

    /// The class registered under `name`.
    public func type(named name: String) -> ViewController.Type? { types[name] }

    /// Every registered name, sorted.
    public var names: [String] { types.keys.sorted() }
}
