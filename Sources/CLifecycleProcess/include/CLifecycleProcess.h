//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

#ifndef LIFECYCLEKIT_CLIFECYCLEPROCESS_H
#define LIFECYCLEKIT_CLIFECYCLEPROCESS_H

#include <sys/types.h>

// Starting the next process of a service beside the running one (an upgrade), which Swift cannot do safely: between
// fork and exec a multi-threaded process may only make async-signal-safe calls, so everything the new process needs
// is prepared before the fork, here in C.

// A program started by `clifecycle_spawn_kept`.
typedef struct {
    // The program's pid.
    pid_t pid;
    // The keeper's pid: the child of this process whose child the program is, until released.
    pid_t keeper;
    // Write a byte (or close it) to release the program: the keeper exits, and the program becomes the child of the
    // service manager (the nearest subreaper, or PID 1), which can then supervise it as its main process.
    int release_fd;
    // Becomes readable with 4 bytes, the program's exit code (or 128 + the signal that ended it), if the program exits
    // before it is released; at end of file without them once the keeper has exited.
    int status_fd;
} clifecycle_kept;

// Starts `path` with `argv` and the environment `envp` plus, for each of the `pid_name_count` names in `pid_names`,
// NAME=<the program's pid> (what LISTEN_PID= and WATCHDOG_PID= must say, and only the program knows). The `fd_count`
// descriptors of `fds` become the program's descriptors 3, 4, ... (their close-on-exec flag cleared); every other
// descriptor of this process is expected to be close-on-exec. The program starts with an empty signal mask and every
// signal's default disposition. It runs as the grandchild of this process, under a keeper (see `clifecycle_kept`), so
// that once released it is not this process's child: systemd supervises a main process it did not fork fully only
// when it is its child (otherwise it "will most likely not notice when it exits" and stops it without SIGTERM).
// Returns 0 once the program has exec'ed, with `*kept` filled in; or -errno: of a failed exec (the keeper is reaped
// then), of a failed fork, or of a pipe.
int clifecycle_spawn_kept(
    const char *path,
    char *const argv[],
    char *const envp[],
    const char *const pid_names[],
    int pid_name_count,
    const int fds[],
    int fd_count,
    clifecycle_kept *kept
);

// waitpid(pid, &status, options): its pid once it has exited (`*exit_code` the exit status, or 128 + the signal that
// killed it), 0 while it runs (with WNOHANG), -errno on failure.
pid_t clifecycle_wait(pid_t pid, int *exit_code, int options);

// pidfd_open(2): a descriptor that becomes readable when the process `pid` exits. Returns it, or -errno.
int clifecycle_pidfd_open(pid_t pid);

// The running program's GNU build id (the linker's NT_GNU_BUILD_ID note), copied to `out` (at most `capacity` bytes):
// returns its length, 0 when the program has none. Reads the program's headers in memory (dl_iterate_phdr).
size_t clifecycle_build_id(unsigned char *out, size_t capacity);

#endif
