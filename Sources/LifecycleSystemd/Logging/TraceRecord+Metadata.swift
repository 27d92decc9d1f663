//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

package import LifecyclePrimitives
package import Logging

extension TraceRecord {
    /// The record behind a log event that carries the trace's metadata (`LogKey`); nil for any other log event.
    package init?(metadata: Logger.Metadata) {
        guard case .string(let event)? = metadata[LogKey.event],
            case .string(let target)? = metadata[LogKey.target],
            let sequence = metadata[LogKey.sequence].flatMap({ Int("\($0)") })
        else { return nil }
        self.init(
            sequence: sequence,
            event: event,
            target: target,
            state: metadata[LogKey.state].map { "\($0)" } ?? "",
            cause: metadata[LogKey.cause].map { "\($0)" } ?? "",
            detail: metadata[LogKey.detail].map { "\($0)" },
            scene: metadata[LogKey.scene].map { "\($0)" }
        )
    }
}
