//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) package import LifecycleKit
import LifecyclePrimitives
import LifecycleSystemd
import Logging

/// Reads storyboard files.
enum StoryboardFile {
    /// The storyboard at `path`, parsed; errors name `path:line:column` (or the system's reason it cannot be read).
    /// Only a regular file of at most 8 MiB is read, without ever blocking on what is at the path.
    static func read(_ path: String) throws(ArchiveError) -> Archive {
        let text: String
        do {
            text = try RegularFile.readText(path, limit: RegularFile.storyboardLimit)
        } catch {
            throw ArchiveError(source: path, reason: "the storyboard cannot be read: \(error)")
        }
        return try StoryboardFormat.parse(text, source: path)
    }
}

/// What the daemon does before it launches the application: the storyboard, then the saved state.
enum LaunchPreparation {
    case launch(restoring: Archive?, lastRun: RunEnd?)
    case exit(Int32)
}

extension Daemon {
    /// Loads the storyboard (as UIKit loads the main storyboard before `willFinishLaunching`) and reads the saved
    /// state; a storyboard that cannot be loaded ends the daemon with 78 (EX_CONFIG), its error naming
    /// `file:line:column` and what would be valid.
    func prepareLaunch(storedState: [SocketActivation.Socket] = []) -> LaunchPreparation {
        let settings = configuration.restoration
        if let path = settings.storyboard {
            do {
                let storyboard = try StoryboardFile.read(path)
                try application.loadStoryboard(storyboard)
                loadedStoryboard = storyboard
                logger.info("loaded the storyboard \(path)")
            } catch {
                logger.error("storyboard: \(error)")
                return .exit(ExitStatus.configuration.rawValue)
            }
        }
        // An upgrade's successor saves nothing until it is the main process: the predecessor's saves are the
        // service's, and a successor that is called off must leave them as they are. Nor does a process that handed
        // over: the successor's saves are the newer ones.
        let store = StateStore(
            settings: settings,
            notifier: effects.notifier,
            environment: effects.environment,
            logger: logger,
            isOwner: { [unowned self] in role.isMain }
        ) { [notifications] error in notifications.reportFailure(error) }
        store.writerVersion = options.version
        store.newerStateVersions = { [unowned self] archive in application.newerStateVersions(in: archive) }
        stateStore = store
        let keeper = RunKeeper(
            directory: store.directory,
            environment: effects.environment,
            upgradedFrom: incoming?.previousPID,
            version: options.version,
            settings: settings,
            logger: logger
        )
        runKeeper = keeper
        // Under systemd only: the backoff keeps its start limit from closing a socket unit's listener. A container's
        // orchestrator backs off by itself (Kubernetes' CrashLoopBackOff), and in a terminal a person restarts.
        if incoming == nil, effects.underSystemd {
            switch LaunchBackoff.action(end: keeper.end, sameBuild: keeper.isSameBuild, settings: settings) {
            case .launch:
                break
            case .giveUp:
                let count = keeper.end?.abnormalEndsInARow ?? 0
                logger.error(
                    """
                    giving up: \(count) runs in a row ended abnormally (the last by \(keeper.end?.description ?? "?")); exiting \
                    with status \(ExitStatus.unavailable.rawValue), which the unit's RestartPreventExitStatus= keeps systemd from \
                    restarting. A start after this waits \(settings.backoffMaximum.formattedForLog) first; a new build starts at once
                    """
                )
                keeper.exited(cause: .gaveUp, signal: nil, status: ExitStatus.unavailable.rawValue)
                return .exit(ExitStatus.unavailable.rawValue)
            case .wait(let delay):
                if !waitBeforeLaunch(delay, end: keeper.end) {
                    keeper.exited(cause: .stop, signal: "SIGTERM", status: 0)
                    logger.info("terminated cleanly before launching")
                    return .exit(0)
                }
            }
        }
        var decision = keeper.decision(settings: settings)
        if incoming != nil { decision = .restore }
        var restoreSetAside = incoming == nil ? settings.restoreSetAside : nil
        if case .setAside(let generation, _) = decision, restoreSetAside != nil {
            logger.warning("[Restoration] RestoreSetAside= is not applied: the safe launch sets generation \(generation) aside")
            restoreSetAside = nil
        }
        let outcome = store.load(
            stored: FileDescriptorStore.read(storedState),
            decision: decision,
            restoreSetAside: restoreSetAside
        )
        launchOutcome = outcome
        if let newest = outcome.newestGeneration {
            application.continueGenerations(from: min(newest, StateStore.highestRestoredGeneration))
        }
        if incoming == nil {
            keeper.launching(
                restored: outcome.archive?.generation,
                restoredSetAside: outcome.restoredSetAside != nil,
                settings: settings
            )
        }
        logLaunch(outcome, end: keeper.end)
        return .launch(restoring: outcome.archive, lastRun: keeper.end)
    }

    /// A reload's offer phase: reads the storyboard `configuration` names and plans its change, moving nothing; returns
    /// why it cannot be used (the reload is then refused), or nil. A storyboard the tree was not loaded from takes
    /// effect at the next start.
    func prepareStoryboard(for configuration: DaemonConfiguration) -> String? {
        preparedStoryboard = nil
        guard let path = configuration.restoration.storyboard else { return nil }
        guard let old = loadedStoryboard else {
            logger.notice("the storyboard \(path) takes effect at the next start: the tree was not loaded from one")
            return nil
        }
        do {
            let new = try StoryboardFile.read(path)
            guard new.root != old.root else {
                logger.debug("the storyboard \(path) did not change")
                return nil
            }
            preparedStoryboard = (new, try application.prepareStoryboardChange(from: old, to: new))
            return nil
        } catch {
            return "storyboard: \(error)"
        }
    }

    /// A reload's apply phase: the storyboard change planned when it was offered is performed, as a hand-over.
    func applyPreparedStoryboard() {
        guard let (new, change) = preparedStoryboard else { return }
        preparedStoryboard = nil
        let changes = change.perform()
        loadedStoryboard = new
        logger.info("storyboard \(new.sourceName) applied: \(changes.isEmpty ? "nothing to change" : changes.joined(separator: "; "))")
    }

    package func application(_ application: Application, didEncodeRestorableState archive: Archive) {
        if case .handedOver = role {
            // The successor's saves are the service's; the tree's last values go to it once this process has drained.
            finalTree = archive
        } else {
            stateStore?.save(archive)
        }
    }

    /// This process handed over and has drained: the delegate's final values (after the drain) and the tree's, saved
    /// at termination, go to the successor, which merges them once this process has exited.
    func leaveFinalStateForSuccessor() {
        guard case .handedOver = role, let stateStore else { return }
        var archive = finalTree ?? Archive(root: Archive.Node(className: "ViewController"))
        archive.applicationState = application.finalStateForSuccessor()
        application.trace.flush()
        stateStore.saveFinalState(archive)
    }

    /// The predecessor of an upgrade has exited: the state it saved as it terminated, after it handed over, is merged
    /// by the delegate (``ApplicationDelegate/application(_:didReceiveFinalStateOf:)``).
    func receivePredecessorFinalState(_ pid: Int32) {
        guard let final = stateStore?.takeFinalState(of: pid) else { return }
        logger.info(
            "upgrade: pid \(pid) saved generation \(final.generation) as it exited, after the hand-over; the delegate merges it",
            metadata: [LogKey.upgrade: "final-state"]
        )
        application.receiveFinalState(PredecessorState(pid: pid, final: final, handedOver: launchOutcome?.archive))
    }
}
