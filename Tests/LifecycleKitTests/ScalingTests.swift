//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Testing

@_spi(Internal) @testable import LifecycleKit

/// A controller with its root view and one subview, as the scaling benchmark builds them.
@MainActor
final class ScalingController: ViewController {
    override func viewDidLoad() {
        view.addSubview(View(name: "label"))
    }
}

/// A tree of `count` controllers, `fanOut` children each, breadth first; every child embedded in its parent.
@MainActor
func scalingTree(count: Int, fanOut: Int = 10) -> ViewController {
    let root = ScalingController(identifier: "root")
    var frontier: [ViewController] = [root]
    var made = 1
    while made < count {
        var next: [ViewController] = []
        for parent in frontier {
            for _ in 0..<fanOut where made < count {
                let child = ScalingController(identifier: "c\(made)")
                parent.embed(child)
                next.append(child)
                made += 1
            }
        }
        frontier = next
    }
    return root
}

/// Every tree operation is linear in the number of controllers and views: the nodes its walks visit (counted in
/// debug builds by `TreeWork`) grow with the tree as the tree grows, not faster. Counted work, not wall time, so the
/// test is as stable on a loaded machine as on an idle one.
@MainActor
@Suite("Tree operations scale linearly")
struct ScalingTests {
    /// The work of each operation on a tree of `count` controllers, by name.
    ///
    /// Each operation is a main-actor job of its own: the test gives the main actor back before each, so the other
    /// `@MainActor` tests of a parallel run (which share it) are not held for the whole test. Held, they waited 9 s
    /// in a debug build and more than 30 s under ThreadSanitizer on 2 cores, past a `TestHost.waitUntil` time-out.
    static func work(count: Int, traced: Bool) async -> [String: Int] {
        var work: [String: Int] = [:]
        func measure(_ name: String, _ body: () -> Void) async {
            await Task.yield()
            TreeWork.reset()
            body()
            work[name] = TreeWork.visits
        }
        var root: ViewController?
        await measure("build") { root = scalingTree(count: count) }
        let navigation = NavigationController(rootViewController: ScalingController(identifier: "first"), identifier: "nav")
        root!.embed(navigation)
        let app = makeApplication(delegate: TestDelegate { [root] app in app.window = Window(rootViewController: root) })
        root = nil
        // Traced, every event builds its target's path: the paths must cost no more than the events themselves.
        var events = 0
        if traced { app.trace.observe { _ in events += 1 } }
        await measure("launch") { app.launch() }
        await measure("background") { app.requestEnterBackground() }
        await measure("foreground") { app.requestBecomeActive() }
        await measure("memory warning") { app.requestMemoryWarning() }
        await measure("tree order") { _ = app.controllersInTreeOrder() }
        let top = app.window!.rootViewController!
        await measure("layout pass") {
            for controller in app.controllersInTreeOrder() { controller.view.setNeedsLayout() }
            app.runEndOfTurn()
        }
        await measure("display pass") {
            for controller in app.controllersInTreeOrder() { controller.view.subviews[0].setNeedsDisplay() }
            app.runEndOfTurn()
        }
        await measure("push and pop a tree") {
            navigation.pushViewController(scalingTree(count: count), animated: false)
            app.runEndOfTurn()
            navigation.popViewController(animated: false)
            app.runEndOfTurn()
        }
        await measure("present and dismiss") {
            let modal = ScalingController(identifier: "modal")
            modal.modalPresentationStyle = .fullScreen
            top.present(modal, animated: false)
            app.runEndOfTurn()
            top.dismiss(animated: false)
            app.runEndOfTurn()
        }
        await measure("terminate") { app.requestTermination() }
        if traced { #expect(events > count) }
        return work
    }

    @Test(arguments: [false, true])
    func everyOperationDoesWorkLinearInTheSizeOfTheTree(traced: Bool) async {
        let small = await Self.work(count: 400, traced: traced)
        let large = await Self.work(count: 3200, traced: traced)
        #expect(small.values.reduce(0, +) > 0, "nothing was counted: \(small)")
        for (operation, smallWork) in small.sorted(by: { $0.key < $1.key }) {
            let largeWork = large[operation]!
            let ratio = Double(largeWork) / Double(max(smallWork, 1))
            // Eight times the tree: linear work is about eight times as much; quadratic would be sixty-four.
            // An event over a tree that did not change walks nothing at all (the fan-out keeps its list): 0 and 0.
            if smallWork == 0 {
                #expect(largeWork == 0, "\(operation): no work for 400 controllers, \(largeWork) nodes visited for 3,200")
                continue
            }
            #expect(ratio <= 8 * 1.25, "\(operation): \(smallWork) nodes visited for 400 controllers, \(largeWork) for 3,200 (×\(ratio))")
        }
    }
}
