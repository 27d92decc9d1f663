import ArgumentParser
import CBenchSupport
import LifecycleBenchSupport
import LifecycleDaemon
import LifecycleKit
import LifecycleSystemd

#if canImport(Glibc)
import Glibc
#endif

/// The daemon's real main loop with a benchmark delegate, written with the entry point a user writes: SIGUSR1 is
/// mapped to memory-warning, so `applicationDidReceiveMemoryWarning` is the first callback a SIGUSR1 causes, and it
/// stamps the time first thing.
///
///     lifecycle-bench-daemon [--controllers N]
///
/// `--controllers N` shows a tree of N controllers (each with a view) instead of an empty window (for the terminate
/// and scaling benchmarks). `$LIFECYCLE_BENCH_SHM` names the latency benchmark's shared memory.
@main
final class BenchDelegate: ApplicationMain {
    struct Options: ParsableArguments {
        @Option(help: "Show a tree of this many controllers, each with a view.")
        var controllers = 0

        func validate() throws {
            guard controllers >= 0 else { throw ValidationError("--controllers needs a non-negative count") }
        }
    }

    nonisolated static var commandConfiguration: CommandConfiguration {
        CommandConfiguration(commandName: "lifecycle-bench-daemon", abstract: "The benchmarks' daemon.")
    }

    private var root: ViewController?

    /// SIGUSR1 asks for a memory warning, ahead of whatever the command line maps.
    static func main() {
        main(arguments: ["--signal", "SIGUSR1=memory-warning"] + CommandLine.arguments.dropFirst())
    }

    func configure(options: Options, settings: NoSettings) {
        guard root == nil, options.controllers > 0 else { return }
        root = ControllerTree.make(count: options.controllers)
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
