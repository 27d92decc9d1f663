/// A stack of controllers, the top one on screen, as UIKit's navigation controller.
///
/// Pushing B over A: `B.loadView → B.viewDidLoad → A.viewWillDisappear → B.viewWillAppear → (layout of B) →
/// A.viewDidDisappear → B.viewDidAppear`. Popping B: `B.viewWillDisappear → A.viewWillAppear →
/// B.viewDidDisappear → A.viewDidAppear → B.deinit`. Every controller on the stack is a child and receives the
/// application events, visible or not.
@MainActor
open class NavigationController: ViewController {
    /// The stack, bottom first; the same controllers as ``ViewController/children``.
    public var viewControllers: [ViewController] { children }

    /// The controller on top of the stack.
    public var topViewController: ViewController? { children.last }

    /// Creates a navigation controller with a root controller.
    public init(rootViewController: ViewController, identifier: String? = nil) {
        super.init(identifier: identifier)
        addChild(rootViewController)
        rootViewController.notifyDidMove(toParent: self)
    }

    /// Creates an empty navigation controller.
    public override init(identifier: String? = nil) {
        super.init(identifier: identifier)
    }

    /// Decodes a navigation controller; its archived children become the stack.
    public required init(coder: Coder) throws {
        try super.init(coder: coder)
    }

    open override func loadView() {
        view = View(name: "view")
    }

    override func embeddedChildViewsOnLoad() -> [ViewController] {
        topViewController.map { [$0] } ?? []
    }

    /// Pushes a controller on top of the stack; it appears and the previous top disappears.
    public func pushViewController(_ controller: ViewController, animated: Bool) {
        precondition(!children.contains { $0 === controller }, "\(controller.identifier) is already on the stack")
        addChild(controller)
        transition(to: controller, animated: animated, pushing: true) { [unowned self] in
            // Unless it was popped again in the same turn.
            if controller.parent === self { controller.notifyDidMove(toParent: self) }
        }
    }

    /// Pops the top controller; the one below appears. Returns the popped controller (released once the
    /// transition is over if nobody else holds it). The root controller is never popped.
    ///
    /// The popped controller leaves the stack at once (a second pop in the same turn pops the next one); its
    /// `didMove(toParent: nil)` comes at the end of the turn, after the one below appeared.
    @discardableResult
    public func popViewController(animated: Bool) -> ViewController? {
        guard children.count > 1, let top = topViewController else { return nil }
        top.notifyWillMove(toParent: nil)
        top.detachFromParent()
        transition(to: topViewController, animated: animated, pushing: false) {
            // Unless it was pushed again in the same turn.
            if top.parent == nil { top.notifyDidMove(toParent: nil) }
            withExtendedLifetime(top) {}
        }
        return top
    }

    /// Pops every controller above the root; the root appears. Returns the popped controllers.
    @discardableResult
    public func popToRootViewController(animated: Bool) -> [ViewController]? {
        guard children.count > 1 else { return nil }
        return setStack(Array(children.prefix(1)), animated: animated)
    }

    /// Replaces the stack; if the top changes, the new top appears (push order if it is new, pop order if it was
    /// on the stack).
    public func setViewControllers(_ controllers: [ViewController], animated: Bool) {
        setStack(controllers, animated: animated)
    }

    @discardableResult
    private func setStack(_ controllers: [ViewController], animated: Bool) -> [ViewController] {
        let old = children
        let oldIDs = Set(old.map(ObjectIdentifier.init))
        let newIDs = Set(controllers.map(ObjectIdentifier.init))
        let removed = old.filter { !newIDs.contains(ObjectIdentifier($0)) }
        let added = controllers.filter { !oldIDs.contains(ObjectIdentifier($0)) }
        for controller in removed { controller.notifyWillMove(toParent: nil) }
        for controller in removed { controller.detachFromParent() }
        for controller in added { addChild(controller) }
        reorderChildren(controllers)
        // Push order when the new top is new, pop order when it was on the stack.
        let pushing = topViewController.map { !oldIDs.contains(ObjectIdentifier($0)) } ?? false
        transition(to: topViewController, animated: animated, pushing: pushing) { [unowned self] in
            // Each finishes its move unless a later change in the same turn moved it again.
            for controller in removed where controller.parent == nil { controller.notifyDidMove(toParent: nil) }
            for controller in added where controller.parent === self { controller.notifyDidMove(toParent: self) }
            withExtendedLifetime(removed) {}
        }
        return removed
    }

    /// Shows `incoming` in this controller's view: whatever controller view it shows now leaves (the view moves
    /// drive the appearance callbacks), the incoming view enters, and `completion` runs at the end of the turn
    /// after the did-callbacks.
    private func transition(
        to incoming: ViewController?,
        animated: Bool,
        pushing: Bool,
        completion: @escaping @MainActor () -> Void
    ) {
        guard let container = viewIfLoaded else {
            // Not loaded: nothing is shown; the top's view is embedded when this controller's view loads.
            completion()
            return
        }
        incoming?.lastTransitionAnimated(animated)
        incoming?.loadViewIfNeeded()
        for shown in container.subviews where shown.viewController != nil && shown !== incoming?.viewIfLoaded {
            shown.viewController?.lastTransitionAnimated(animated)
            let wasInWindow = shown.window != nil
            shown.removeFromSuperview()
            if pushing, wasInWindow { application?.layOutBeforeLeaving(shown) }
        }
        if let incoming, incoming.view.superview !== container {
            container.addSubview(incoming.view)
        }
        if let application {
            application.scheduleTurnEndWork(completion)
        } else {
            completion()
        }
    }
}
