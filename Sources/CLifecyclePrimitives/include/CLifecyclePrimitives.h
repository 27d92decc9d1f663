//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

#ifndef LIFECYCLEKIT_CLIFECYCLEPRIMITIVES_H
#define LIFECYCLEKIT_CLIFECYCLEPRIMITIVES_H

// What LifecyclePrimitives reads from glibc through a C module of its own: in a release build the compiler takes
// timespec (and the epoll flags) from whichever imported C module's headers declare them besides Glibc, and
// MemberImportVisibility then wants that module imported where a member is read. Without a module of the package that
// includes these headers, that module is the toolchain's private SwiftOverlayShims; with this one, it is ours.
#include <pthread.h>
#include <sys/epoll.h>
#include <time.h>

#endif
