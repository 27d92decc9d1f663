//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// Why a ``VaporServer`` could not serve its descriptor: the error both adapters throw (LifecycleHTTPCore's), part of this
// module's API, so an adopter reads its `code` without importing the shared module.
@_exported public import struct LifecycleHTTPCore.HTTPServerError
