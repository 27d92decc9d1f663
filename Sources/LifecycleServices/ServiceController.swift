//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

public import LifecycleKit
import Logging
public import ServiceLifecycle

/// What a ``ServiceController``'s services do when the application enters the background.
public enum BackgroundServicePolicy: String, Sendable, Hashable, CaseIterable {
    /// Shut down gracefully, as on disappearance: a server stops accepting connections and finishes the requests in
    /// flight (swift-service-lifecycle's graceful shutdown, services in reverse order), bounded by the controller's
    /// ``ServiceController/shutdownTimeout``, after which they are cancelled. The default: a backgrounded server
    /// serves nobody new and loses nobody's request.
    case drain
    /// Cancel at once: in-flight work is abandoned. For work that is cheap to redo and must not hold up a sleep.
    case cancel
    /// Keep serving in the background; only disappearance (or termination) stops the services.
    case keepRunning
}

/// A controller that hosts swift-service-lifecycle `Service`s — an HTTP server, a queue consumer, a poller — as UIKit
/// hosts views: they run while the controller is on screen and the application is in the
/// foreground, and stop when either ends.
///
/// Each run is a fresh `ServiceGroup` of the services that ``makeServices(on:)`` returns (started in order, shut down
/// in reverse order). On background (per ``backgroundPolicy``) or disappearance the group shuts down gracefully
/// within ``shutdownTimeout``, then is cancelled; meanwhile the controller holds a background task, so systemd's
/// stop (`EXTEND_TIMEOUT_USEC=`) and a sleep (logind's delay inhibitor) wait for the in-flight work. On return to
/// the foreground the services run again, once the previous run has ended. A service that throws or returns early
/// ends the run as a failure: it is reported in the trace (`lifecycleTask(_:didFailWithError:)`), to the controller's
/// `lifecycleTask(_:didFailWithError:)` and to the delegate, the main loop carries on, and the ``restartPolicy``
/// starts the services again after a delay while the controller is on screen in the foreground — or, past its limit,
/// escalates (by default the application terminates with status 75 and systemd restarts it).
///
/// A server that accepts connections takes its listening sockets from the controller: declare them as
/// ``listeners``, and each run gets them (``ListeningSocket``) — the sockets systemd passed under their names (a
/// `.socket` unit, the file descriptor store, an upgrade), or sockets bound here when none was passed. They outlive
/// the runs: in the background (``ListenerPolicy/pause``, the default) the server stops accepting and finishes what
/// is in flight while connections wait in the backlog, served on the return to the foreground.
///
/// What a web framework's server gets depends on whether it serves a socket it is given. Hummingbird 2 and Vapor 4
/// each bind their own address, so `Examples/HelloService` has an adapter for each, on one shared core: Hummingbird's
/// router is served by `LifecycleHummingbird`'s `HTTPServer`, and a Vapor application by `LifecycleVapor`'s
/// `VaporServer` (a new Vapor `Application` for each run, booted before it accepts and shut down after its last
/// connection closed), each on a `dup(2)` of its ``ListeningSocket``. With either, a restart, a crash, the background
/// and an upgrade refuse no connection, and a graceful shutdown answers a request that arrives late on a connection,
/// with `Connection: close`. A server that binds its own port (Hummingbird's `Application`, Vapor's `app.server`) is
/// hosted all the same — started, drained, restarted on failure — but nothing holds its port between runs:
/// connections are refused while it restarts, in the background and during an upgrade.
///
/// ```swift
/// let server = ServiceController(identifier: "http", listeners: [.tcp("http", port: 8080)]) { sockets in
///     [HTTPServer(router: router, descriptor: try sockets[0].duplicate(), logger: logger)]
/// }
/// ```
@MainActor
open class ServiceController: ViewController {
    /// What the services do when the application enters the background.
    public let backgroundPolicy: BackgroundServicePolicy
    /// How long a graceful shutdown may take before the services are cancelled.
    public var shutdownTimeout: Duration
    /// The task that runs the services (its runs, its failures and restarts).
    public private(set) var services: LifecycleTask!
    /// What happens when a service fails while it should run.
    public let restartPolicy: RestartPolicy
    /// The listening sockets the services accept on, in the order each run receives them.
    public let listeners: [Listener]
    /// What the listening sockets do while the application is in the background.
    public let listenerPolicy: ListenerPolicy

    private var factory: (@MainActor ([ListeningSocket]) throws -> [any Service])?

    /// Hosts the services `makeServices` returns, made anew for every run; a failure restarts them as
    /// `restartPolicy` says (`RestartPolicy.standard` by default).
    public init(
        identifier: String? = nil,
        backgroundPolicy: BackgroundServicePolicy = .drain,
        shutdownTimeout: Duration = .seconds(10),
        restartPolicy: RestartPolicy = .standard,
        services makeServices: @escaping @MainActor () -> [any Service]
    ) {
        self.backgroundPolicy = backgroundPolicy
        self.shutdownTimeout = shutdownTimeout
        self.restartPolicy = restartPolicy
        self.listeners = []
        self.listenerPolicy = .pause
        self.factory = { _ in makeServices() }
        super.init(identifier: identifier)
        hostServices()
    }

    /// Hosts the services `makeServices` returns for each run, given the run's listening sockets (in the order of
    /// `listeners`); in the background the sockets do what `listenerPolicy` says. A socket that cannot be opened, or
    /// a throw from `makeServices`, fails the run, which `restartPolicy` retries.
    public convenience init(
        identifier: String? = nil,
        listeners: [Listener],
        listenerPolicy: ListenerPolicy = .pause,
        backgroundPolicy: BackgroundServicePolicy = .drain,
        shutdownTimeout: Duration = .seconds(10),
        restartPolicy: RestartPolicy = .standard,
        services makeServices: @escaping @MainActor ([ListeningSocket]) throws -> [any Service]
    ) {
        self.init(
            identifier: identifier,
            listeners: listeners,
            listenerPolicy: listenerPolicy,
            backgroundPolicy: backgroundPolicy,
            shutdownTimeout: shutdownTimeout,
            restartPolicy: restartPolicy
        )
        // Read when a run starts, never before: the controller is in no window yet.
        factory = makeServices
    }

    /// A subclass's form: hosts the services its ``makeServices(on:)`` returns for each run, given the run's listening
    /// sockets (in the order of `listeners`); in the background the sockets do what `listenerPolicy` says.
    public init(
        identifier: String? = nil,
        listeners: [Listener],
        listenerPolicy: ListenerPolicy = .pause,
        backgroundPolicy: BackgroundServicePolicy = .drain,
        shutdownTimeout: Duration = .seconds(10),
        restartPolicy: RestartPolicy = .standard
    ) {
        precondition(
            Set(listeners.map(\.name)).count == listeners.count,
            "ServiceController: listener names must be distinct: \(listeners.map(\.name))"
        )
        self.backgroundPolicy = backgroundPolicy
        self.shutdownTimeout = shutdownTimeout
        self.restartPolicy = restartPolicy
        self.listeners = listeners
        self.listenerPolicy = listenerPolicy
        self.factory = nil
        super.init(identifier: identifier)
        hostServices()
    }

    /// Decodes a service controller; a subclass supplies the services by overriding ``makeServices()``.
    public required init(coder: Coder) throws {
        self.backgroundPolicy = .drain
        self.shutdownTimeout = .seconds(10)
        self.restartPolicy = .standard
        self.listeners = []
        self.listenerPolicy = .pause
        self.factory = nil
        try super.init(coder: coder)
        hostServices()
    }

    /// The services of one run, in start order, for a controller without listeners; by default those of the closure
    /// given to the initializer.
    open func makeServices() -> [any Service] {
        guard listeners.isEmpty, let factory else { return [] }
        // The closure of the initializer without listeners, which does not throw.
        return (try? factory([])) ?? []
    }

    /// The services of one run, in start order, given its listening sockets (in the order of ``listeners``); by
    /// default those of the closure given to the initializer, else ``makeServices()``. A throw fails the run.
    open func makeServices(on sockets: [ListeningSocket]) throws -> [any Service] {
        try factory?(sockets) ?? makeServices()
    }

    private func hostServices() {
        let activity: LifecycleActivity = backgroundPolicy == .keepRunning ? .visible : .visibleInForeground
        services = task("services", while: activity, restartPolicy: restartPolicy) { [unowned self] in
            let sockets: [ListeningSocket]
            do {
                sockets = try claimListeners()
            } catch {
                return LifecycleRun(body: { throw error })
            }
            let made: [any Service]
            do {
                made = try makeServices(on: sockets)
            } catch {
                if let application { for socket in sockets { ListenerSockets.release(socket, in: application) } }
                return LifecycleRun(body: { throw error })
            }
            let group = ServiceGroup(configuration: groupConfiguration(for: made))
            let policy = backgroundPolicy
            let closesListeners = listenerPolicy == .close
            var run = LifecycleRun(body: { [weak application] in
                do {
                    try await group.run()
                } catch {
                    await Self.release(sockets, in: application)
                    throw error
                }
                await Self.release(sockets, in: application)
            }) { [weak application] reason in
                if reason == .background, closesListeners {
                    // Called on the main actor, by the task that stops the run. Not on the way to termination: the next
                    // process of the service serves what waits in the backlog then.
                    MainActor.assumeIsolated {
                        guard let application, !application.isTerminating else { return }
                        for socket in sockets { ListenerSockets.shutDown(socket, in: application) }
                    }
                }
                if reason == .background, policy == .cancel { return false }
                Task { await group.triggerGracefulShutdown() }
                return true
            }
            // Stopped while it waited for the previous run to end (SIGUSR1, SIGUSR2, SIGUSR1 during a drain): the
            // sockets it claimed go back, or a retired one would never be closed and status would say "serving".
            run.abandon = { [weak application] in await Self.release(sockets, in: application) }
            return run
        }
    }

    /// The run's listening sockets, in the order of ``listeners``; none claimed when one fails.
    private func claimListeners() throws(ListenerError) -> [ListeningSocket] {
        guard !listeners.isEmpty else { return [] }
        guard let application else {
            throw ListenerError(.noApplication, listener: listeners[0].name, address: "\(listeners[0].address)")
        }
        var sockets: [ListeningSocket] = []
        do {
            for listener in listeners { sockets.append(try ListenerSockets.claim(listener, in: application)) }
        } catch {
            for socket in sockets { ListenerSockets.release(socket, in: application) }
            throw error
        }
        return sockets
    }

    private static func release(_ sockets: [ListeningSocket], in application: Application?) async {
        guard !sockets.isEmpty else { return }
        await MainActor.run {
            guard let application else { return }
            for socket in sockets { ListenerSockets.release(socket, in: application) }
        }
    }

    private func groupConfiguration(for services: [any Service]) -> ServiceGroupConfiguration {
        var configuration = ServiceGroupConfiguration(
            services: services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) },
            logger: application?.logger ?? Logger(label: "services")
        )
        // Past this, the group cancels its services. No cancellation bound: swift-service-lifecycle ends that one
        // with fatalError; the background task's expiration bounds the wait instead, without taking the process
        // down.
        configuration.maximumGracefulShutdownDuration = shutdownTimeout
        return configuration
    }
}

extension Application {
    /// The listening socket named `name`, as the application holds it now (where it listens, where it came from), or
    /// nil when no hosted server has opened it. A reload that would move a listener checks where it came from: a
    /// socket unit's is systemd's to move.
    public func listener(named name: String) -> ListeningSocket? {
        guard let listener = listeners[name] else { return nil }
        return ListeningSocket(
            name: listener.name,
            address: listener.address,
            origin: listener.origin,
            descriptor: listener.descriptor
        )
    }
}
