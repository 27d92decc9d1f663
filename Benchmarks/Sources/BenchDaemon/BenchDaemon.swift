import CBenchSupport
import LifecycleBenchSupport
import LifecycleDaemon
import LifecycleKit
import LifecycleSystemd

#if canImport(Glibc)
import Glibc
#endif

/// The daemon's real main loop (`Daemon.run`) with a benchmark delegate: SIGUSR1 is mapped to memory-warning, so
/// `applicationDidReceiveMemoryWarning` is the first callback a SIGUSR1 causes, and it stamps the time first thing.
///
///     lifecycle-bench-daemon [--controllers N]
///
/// `--controllers N` shows a tree of N controllers (each with a view) instead of an empty window (for the terminate
/// benchmark). `$LIFECYCLE_BENCH_SHM` names the latency benchmark's shared memory.
@main
enum BenchDaemon {
    static func main() {
        // First thing, before any thread exists: every thread inherits this mask.
        MainLoop.blockSignals(Daemon.signalsToBlockAtStart)
        var controllers = 0
        var arguments = CommandLine.arguments.dropFirst()
        while let argument = arguments.popFirst() {
            switch argument {
            case "--controllers":
                guard let value = arguments.popFirst().flatMap({ Int($0) }), value >= 0 else {
                    fail("--controllers needs a non-negative count")
                }
                controllers = value
            default:
                fail("unknown argument \(argument); usage: lifecycle-bench-daemon [--controllers N]")
            }
        }
        let attached = bench_attach_from_environment()
        if attached < 0 { fail("cannot map $\(BENCH_SHM_ENVIRONMENT): errno \(-attached)") }

        var options = DaemonOptions()
        options.signalOverrides = ["SIGUSR1=memory-warning"]
        options.workInterval = .zero
        let code = MainActor.assumeIsolated {
            Daemon.run(options: options) { _, _ in
                let root = controllers > 0 ? ControllerTree.make(count: controllers) : nil
                return (BenchDelegate(root: root), nil)
            }
        }
        exit(code)
    }

    static func fail(_ message: String) -> Never {
        let line = Array("lifecycle-bench-daemon: \(message)\n".utf8)
        _ = line.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        exit(64)
    }
}

/// Stamps the latency of each memory warning first thing, and shows the prepared tree (or an empty window).
@MainActor
final class BenchDelegate: ApplicationDelegate {
    private var root: ViewController?

    init(root: ViewController?) {
        self.root = root
    }

    func applicationDidReceiveMemoryWarning(_ application: Application) {
        bench_stamp()
    }

    func application(_ application: Application, didFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
        application.window = Window(rootViewController: root)
        root = nil
        return true
    }
}
