//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

#ifndef LIFECYCLEKIT_CLIFECYCLEIPC_H
#define LIFECYCLEKIT_CLIFECYCLEIPC_H

#include <errno.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

// The few socket calls LifecycleIPC cannot make from Swift. No libsystemd here: lifecyclectl links this module.

// accept4(2) is declared by glibc only under _GNU_SOURCE, which Swift's Glibc module does not define: the control
// socket accepts non-blocking, close-on-exec connections in one call. Returns the descriptor, or -errno.
static inline int lifecycle_ipc_accept4(int fd, int flags) {
    long result = syscall(SYS_accept4, fd, (void *)0, (void *)0, flags);
    return result < 0 ? -errno : (int)result;
}

// glibc's SOCK_* flags as plain ints: Swift imports them as members of an enum whose module can differ between
// builds (a release build with sanitizers found them only through a C module that includes <sys/socket.h>).
static inline int lifecycle_ipc_sock_stream(void) { return SOCK_STREAM; }
static inline int lifecycle_ipc_sock_cloexec(void) { return SOCK_CLOEXEC; }
static inline int lifecycle_ipc_sock_nonblock(void) { return SOCK_NONBLOCK; }

#endif
