//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// The header's functions are static inline; SwiftPM needs one C file to build the target.
#include "CLifecycleIPC.h"
