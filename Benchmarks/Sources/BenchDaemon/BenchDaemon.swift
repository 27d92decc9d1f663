//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import ArgumentParser
import CBenchSupport
import LifecycleBenchSupport
@_spi(Internal) import LifecycleDaemon
@_spi(Internal) import LifecycleKit
import LifecycleSystemd

#if canImport(Glibc)
import Glibc
#endif

/// The daemon's real main loop with a benchmark delegate, written with the entry point a user writes: SIGUSR1 is
/// mapped to memory-warning, so `applicationDidReceiveMemoryWarning` is the first callback a SIGUSR1 causes, and it
/// stamps the time first thing.
///
///     lifecycle-bench-daemon [--controllers N] [--plain-controllers N]
///
/// `--controllers N` shows a tree of N controllers (each with a view) instead of an empty window (for the terminate
/// and scaling benchmarks); `--plain-controllers N` builds the launch's plain-Swift baseline before `READY=1`
/// (`PlainTree.launch`) and shows an empty window. `$LIFECYCLE_BENCH_SHM` names the latency benchmark's shared memory.
///
/// What each signal measures (the stamps go to the shared memory; `lifecycle-bench-probe` sends and reads them):
///
/// - SIGUSR1 (memory-warning): a leaving event, so the tree hears it first (reverse pre-order) and the delegate
///   last: with an empty window the stamp is the signal latency; with a tree, the signal latency plus the fan-out.
/// - SIGHUP (reload, the default map): the reload runs as any reload does (`applicationWillReload` through the tree,
///   the configuration re-read, `applicationDidReload`: the delegate, then the tree). The delegate's
///   `applicationDidReload` schedules end-of-turn work that records the time (`bench_mark`), marks every view of the
///   window for layout (`setNeedsLayout`, a walk over the view tree) and schedules more end-of-turn work that stamps.
///   The end of turn runs its passes before each batch of that work, so the stamp comes after the one layout pass
///   over the whole tree (every view with a controller: `viewWillLayoutSubviews`, `layoutSubviews`,
///   `viewDidLayoutSubviews`): mark → stamp is the marking walk plus the pass, signal → stamp the whole reload too.
@main
final class BenchDelegate: ApplicationMain {
    struct Options: ParsableArguments {
        @Option(help: "Show a tree of this many controllers, each with a view.")
        var controllers = 0

        @Option(help: "Build the launch baseline before READY=1: this many plain controller and view pairs.")
        var plainControllers = 0

        func validate() throws {
            guard controllers >= 0 else { throw ValidationError("--controllers needs a non-negative count") }
            guard plainControllers >= 0 else {
                throw ValidationError("--plain-controllers needs a non-negative count")
            }
        }
    }

    nonisolated static var commandConfiguration: CommandConfiguration {
        CommandConfiguration(commandName: "lifecycle-bench-daemon", abstract: "The benchmarks' daemon.")
    }

    private var root: ViewController?
    /// The launch baseline's tree (`--plain-controllers`), kept as the window keeps a real one.
    private var plain: PlainLeaf?
    /// `configure` runs again after every valid reload: the tree is built once, before launch.
    private var built = false

    /// SIGUSR1 asks for a memory warning, ahead of whatever the command line maps.
    static func main() {
        main(arguments: ["--signal", "SIGUSR1=memory-warning"] + CommandLine.arguments.dropFirst())
    }

    func configure(options: Options, settings: NoSettings) {
        guard !built else { return }
        built = true
        if options.plainControllers > 0 {
            plain = PlainTree.launch(count: options.plainControllers, fanOut: ControllerTree.fanOut)
        }
        guard options.controllers > 0 else { return }
        root = ControllerTree.make(count: options.controllers)
    }

    /// The scaling benchmark's layout pass (see the type's comment): mark, then every view marked, then the stamp
    /// after the pass.
    func applicationDidReload(_ application: Application) {
        PackageInternals.scheduleTurnEndWork(application) { [unowned application] in
            bench_mark()
            if let view = application.window?.rootViewController?.viewIfLoaded { Self.markForLayout(view) }
            PackageInternals.scheduleTurnEndWork(application) { bench_stamp() }
        }
    }

    private static func markForLayout(_ view: View) {
        view.setNeedsLayout()
        for subview in view.subviews { markForLayout(subview) }
    }

    func applicationDidReceiveMemoryWarning(_ application: Application) {
        bench_stamp()
    }

    func application(_ application: Application, willFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
        let attached = bench_attach_from_environment()
        if attached < 0 { application.logger.error("cannot map $\(BENCH_SHM_ENVIRONMENT): errno \(-attached)") }
        return true
    }

    func application(_ application: Application, didFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
        application.window = Window(rootViewController: root)
        root = nil
        return true
    }
}
