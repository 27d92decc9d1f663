//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleIPC
import LifecycleKit
import LifecycleSystemd
import LifecyclePrimitives
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The daemon's control socket (docs/control.md): a ``VarlinkServer`` on the main loop that serves
/// ``ControlService`` to the service's own user, root and the configured group.
@MainActor
final class ControlServer {
    private let server: VarlinkServer
    private let service: ControlService
    /// The path of the socket file this process (or the one that upgraded to it) bound, removed when it stops; nil
    /// for a socket systemd passed, and once an upgrade handed the socket to the next process.
    private(set) var boundPath: String?
    /// The socket file an upgrade's new process takes once it is the main process (``takeOver()``): until then
    /// it is the running process's, and a new process that is called off leaves it where it is.
    private var upgradedPath: String?
    private unowned let daemon: any ControlHost

    private init(
        daemon: any ControlHost,
        server: VarlinkServer,
        service: ControlService,
        boundPath: String?,
        upgradedPath: String?
    ) {
        self.daemon = daemon
        self.server = server
        self.service = service
        self.boundPath = boundPath
        self.upgradedPath = upgradedPath
    }

    /// Listens where ``ControlSocketLocation`` says and serves; nil (after a warning or a notice) when it cannot. The
    /// daemon runs on without it.
    ///
    /// `inherited`: the control socket systemd (or an upgrade) passed, if any; `upgradedPath`: the path of the socket
    /// file the process that upgraded to this one had bound, which this one removes when it stops once it is the main
    /// process. An upgrade's new process passes `accepting: false`: until it is the main process (``takeOver()``) the
    /// running process answers every call, and connections wait in the socket's backlog between the two.
    static func start(
        daemon: any ControlHost,
        loop: MainLoop,
        inherited: SocketActivation.Socket?,
        upgradedPath: String? = nil,
        accepting: Bool = true
    ) -> ControlServer? {
        let logger = daemon.logger
        let location = ControlSocketLocation.resolve(
            settings: daemon.configuration.control,
            inherited: inherited.map { [$0] } ?? [],
            environment: daemon.environment,
            uid: geteuid(),
            programName: daemon.programName
        )
        let descriptor: Int32
        let boundPath: String?
        let description: String
        switch location {
        case .inherited(let fd, let name):
            descriptor = fd
            boundPath = nil
            description = upgradedPath ?? "fd \(fd) (\(name), from systemd)"
        case .path(let path, let directoryMode):
            if let directoryMode, let slash = path.lastIndex(of: "/") {
                let directory = String(path[..<slash])
                if mkdir(directory, directoryMode) != 0, errno != EEXIST {
                    logger.warning("no control socket: cannot make \(directory): \(String(cString: strerror(errno)))")
                    return nil
                }
            }
            do {
                descriptor = try UnixSocket.listen(at: path)
            } catch {
                logger.warning("no control socket: \(error)")
                return nil
            }
            boundPath = path
            description = path
        case .none(let reason):
            logger.notice("no control socket: \(reason)")
            return nil
        }
        let server = VarlinkServer(
            loop: loop,
            listeningDescriptor: descriptor,
            info: VarlinkServer.Info(
                vendor: "LifecycleKit",
                product: daemon.programName,
                version: daemon.programVersion ?? "",
                url: "https://varlink.org"
            ),
            logger: logger
        )
        let service = ControlService(daemon: daemon, socketDescription: description)
        service.serverStatistics = { [unowned server] in (server.statistics, server.connectionCount) }
        server.authorize = { peer in MainActor.assumeIsolated { service.allows(peer) } }
        let handler: (VarlinkRequest) -> Void = { request in MainActor.assumeIsolated { service.handle(request) } }
        server.add(
            VarlinkServer.Interface(
                name: ControlInterface.name,
                description: ControlInterface.description,
                methods: ControlInterface.methods.map { VarlinkServer.Method($0, handler: handler) }
            )
        )
        server.add(
            VarlinkServer.Interface(
                name: ControlInterface.serviceName,
                description: ControlInterface.serviceDescription,
                methods: ControlInterface.serviceMethods.map { VarlinkServer.Method($0, handler: handler) }
            )
        )
        if accepting {
            do {
                try server.start()
            } catch {
                logger.warning("no control socket: \(error)")
                service.hub.stop()
                server.stop()
                if let boundPath { unlink(boundPath) }
                return nil
            }
        }
        logger.info("control socket: \(description)", metadata: [LogKey.control: .string(description)])
        return ControlServer(
            daemon: daemon,
            server: server,
            service: service,
            boundPath: boundPath,
            upgradedPath: boundPath == nil ? upgradedPath : nil
        )
    }

    /// The daemon's dispatch ended and its trace lines are written: followers get the events.
    func dispatchDidEnd() {
        service.hub.flush()
    }

    /// A reload took effect: `Group=` applies to the next connection and `TraceBacklog=` at once; the socket's place
    /// at the next start.
    func apply(_ configuration: DaemonConfiguration, previous: DaemonConfiguration) {
        let fresh = configuration.control
        if fresh.socketPath != previous.control.socketPath || fresh.isEnabled != previous.control.isEnabled {
            daemon.logger.warning(
                "[Control] Socket= and Enable= take effect when \(daemon.programName) restarts"
            )
        }
        service.hub.setCapacity(fresh.traceBacklog)
    }

    /// The listening socket (an upgrade hands a copy to the next process).
    var listeningSocket: Int32 { server.listeningSocket }

    /// This process, started by an upgrade, is the main process now: it accepts on the socket (the running process
    /// has stopped: what arrived meanwhile waited in the backlog), and the socket file is its to remove when it stops.
    /// False, after a warning, when it cannot: the server is stopped and the daemon runs on without it.
    func takeOver() -> Bool {
        if let upgradedPath {
            boundPath = upgradedPath
            self.upgradedPath = nil
        }
        do {
            try server.start()
            return true
        } catch {
            daemon.logger.warning("no control socket: \(error)")
            stop()
            boundPath = nil
            return false
        }
    }

    /// An upgrade handed the socket over: stop accepting (the next process accepts on its copy), finish the calls in
    /// progress, and leave the socket file to the next process.
    func handOver() {
        server.stopAccepting()
        boundPath = nil
    }

    /// Ends every call in progress, closes every connection and removes the socket file this process made.
    func stop() {
        service.hub.stop()
        server.stop()
        if let boundPath { unlink(boundPath) }
    }
}
