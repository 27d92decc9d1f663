//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Testing) public import LifecycleKit
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

/// A controller that hosts swift-service-lifecycle `Service`s — a Hummingbird or Vapor server, a queue consumer, a
/// poller — as UIKit hosts views: they run while the controller is on screen and the application is in the
/// foreground, and stop when either ends.
///
/// Each run is a fresh `ServiceGroup` of the services that ``makeServices()`` returns (started in order, shut down
/// in reverse order). On background (per ``backgroundPolicy``) or disappearance the group shuts down gracefully
/// within ``shutdownTimeout``, then is cancelled; meanwhile the controller holds a background task, so systemd's
/// stop (`EXTEND_TIMEOUT_USEC=`) and a sleep (logind's delay inhibitor) wait for the in-flight work. On return to
/// the foreground the services run again, once the previous run has ended (a server binds its port again only
/// after the old listener closed). A service that throws or returns early ends the run as a failure: it is reported
/// in the trace (`lifecycleTask(_:didFailWithError:)`), to the controller's `lifecycleTask(_:didFailWithError:)` and
/// to the delegate, the main loop carries on, and the ``restartPolicy`` starts the services again after a delay
/// while the controller is on screen in the foreground — or, past its limit, escalates (by default the application
/// terminates with status 75 and systemd restarts it).
///
/// ```swift
/// let server = ServiceController(identifier: "http") {
///     [Hummingbird.Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 8080)))]
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

    private let factory: (@MainActor () -> [any Service])?

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
        self.factory = makeServices
        super.init(identifier: identifier)
        hostServices()
    }

    /// Decodes a service controller; a subclass supplies the services by overriding ``makeServices()``.
    public required init(coder: Coder) throws {
        self.backgroundPolicy = .drain
        self.shutdownTimeout = .seconds(10)
        self.restartPolicy = .standard
        self.factory = nil
        try super.init(coder: coder)
        hostServices()
    }

    /// The services of one run, in start order; by default those of the closure given to the initializer.
    open func makeServices() -> [any Service] {
        factory?() ?? []
    }

    private func hostServices() {
        let activity: LifecycleActivity = backgroundPolicy == .keepRunning ? .visible : .visibleInForeground
        services = task("services", while: activity, restartPolicy: restartPolicy) { [unowned self] in
            let group = ServiceGroup(configuration: groupConfiguration(for: makeServices()))
            let policy = backgroundPolicy
            return LifecycleRun(body: { try await group.run() }) { reason in
                if reason == .background, policy == .cancel { return false }
                Task { await group.triggerGracefulShutdown() }
                return true
            }
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
