//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Dispatch
import LifecycleKit
import Logging

/// Does a job per tick while the application is in the foreground; pauses in the background.
@MainActor
final class WorkerController: ViewController {
    private var timer: (any DispatchSourceTimer)?
    private var jobs = 0
    private var paused = true
    private var timerSuspended = true
    private weak var progress: View?

    init() {
        super.init(identifier: "worker")
        restorationIdentifier = "worker"
    }

    required init(coder: Coder) throws {
        try super.init(coder: coder)
    }

    /// The jobs done survive a restart.
    override func encodeRestorableState(with coder: StateCoder) {
        coder.encode(jobs, forKey: "jobs")
    }

    override func decodeRestorableState(with coder: StateCoder) {
        jobs = coder.decodeInteger(forKey: "jobs") ?? jobs
        progress?.setNeedsDisplay()
    }

    override func viewDidLoad() {
        let label = LabelView(name: "progress") { [unowned self] in
            "worker \(jobs) jobs" + (paused ? " (paused)" : "")
        }
        view.addSubview(label)
        progress = label
        startFeedIfAsked()
    }

    /// The feed, once: work that reads an upstream while the worker is on screen in the foreground, supervised by its
    /// restart policy. With `FailEverySec=` the upstream breaks that long after each start.
    private var feed: LifecycleTask?

    private func startFeedIfAsked() {
        let settings = environment.settings
        guard feed == nil, settings.failEvery > .zero else { return }
        let failEvery = settings.failEvery
        let policy = RestartPolicy.onFailure(
            maxRestarts: settings.maxRestarts,
            within: .seconds(60),
            backoff: .exponential(initial: .milliseconds(100), maximum: .seconds(10))
        )
        feed = task("feed", restartPolicy: policy) {
            try await Task.sleep(for: failEvery)
            throw UpstreamFailure()
        }
    }

    override func applicationDidBecomeActive() { resume() }
    override func applicationDidEnterBackground() { pause() }
    override func applicationWillTerminate() {
        pause()
        stopTimer()
    }

    /// Cancels the timer; Dispatch requires a suspended source to be resumed before its last release.
    private func stopTimer() {
        guard let timer else { return }
        timer.cancel()
        if timerSuspended { timer.resume() }
        timerSuspended = false
        self.timer = nil
    }

    private func resume() {
        guard paused else { return }
        paused = false
        progress?.setNeedsDisplay()
        let interval = environment.settings.workInterval
        guard interval > .zero else { return }
        if timer == nil {
            let source = DispatchSource.makeTimerSource(queue: .main)
            let nanoseconds = DispatchTimeInterval(interval)
            source.schedule(deadline: .now() + nanoseconds, repeating: nanoseconds)
            source.setEventHandler { [weak self] in
                MainActor.assumeIsolated { self?.doJob() }
            }
            timer = source
        }
        timer?.resume()
        timerSuspended = false
    }

    private func pause() {
        guard !paused else { return }
        paused = true
        if let timer, !timerSuspended {
            timer.suspend()
            timerSuspended = true
        }
        environment.logger.info("worker paused after \(jobs) jobs")
        progress?.setNeedsDisplay()
    }

    private func doJob() {
        jobs += 1
        progress?.setNeedsDisplay()
    }

    isolated deinit {
        stopTimer()
    }
}

/// What the worker's feed throws when `FailEverySec=` breaks its upstream.
struct UpstreamFailure: Error, CustomStringConvertible {
    var description: String { "the upstream closed the connection" }
}
