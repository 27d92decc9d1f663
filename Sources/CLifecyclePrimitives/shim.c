//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// The header is all declarations; SwiftPM needs one C file to build the target.
#include "CLifecyclePrimitives.h"
