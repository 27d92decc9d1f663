//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Logging

/// Handler metadata, overridden by the provider's, overridden by the record's own, as swift-log's handlers merge.
func mergedMetadata(
    handler: Logger.Metadata,
    provider: Logger.MetadataProvider?,
    event: Logger.Metadata?
) -> Logger.Metadata {
    // The common case (no handler metadata, no provider): the event's own metadata, without rebuilding it.
    if handler.isEmpty, provider == nil { return event ?? [:] }
    var merged = handler
    if let provided = provider?.get(), !provided.isEmpty {
        merged.merge(provided) { _, new in new }
    }
    if let event, !event.isEmpty {
        merged.merge(event) { _, new in new }
    }
    return merged
}
