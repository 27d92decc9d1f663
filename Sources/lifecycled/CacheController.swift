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

/// A cache warmed when it appears and emptied on a memory warning.
@MainActor
final class CacheController: ViewController {
    private var entries: [[UInt8]] = []
    private weak var usage: View?

    /// A cache is rebuilt, not restored: it has no restoration identifier.
    init() {
        super.init(identifier: "cache")
    }

    required init(coder: Coder) throws {
        try super.init(coder: coder)
    }

    override func viewDidLoad() {
        let label = LabelView(name: "usage") { [unowned self] in "cache \(entries.count) entries" }
        view.addSubview(label)
        usage = label
    }

    override func viewDidAppear(_ animated: Bool) {
        guard entries.isEmpty else { return }
        // On the loop's next turn, as a service warms its caches once it serves: the launch, and READY=1 at its end,
        // do not wait for a megabyte of allocations and page faults (a third of a millisecond, docs/benchmarks.md).
        DispatchQueue.main.async { [weak self] in
            MainActor.assumeIsolated { self?.fill() }
        }
    }

    private func fill() {
        guard entries.isEmpty else { return }
        entries = (0..<16).map { [UInt8](repeating: UInt8($0), count: 64 * 1024) }
        usage?.setNeedsDisplay()
    }

    override func didReceiveMemoryWarning() {
        let freed = entries.reduce(0) { $0 + $1.count }
        entries.removeAll()
        environment.logger.notice("cache emptied on memory warning: freed \(freed / 1024) KiB")
        usage?.setNeedsDisplay()
    }
}
