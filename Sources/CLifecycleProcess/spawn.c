//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

#define _GNU_SOURCE
#include "CLifecycleProcess.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

// Writes `value` in decimal, then a NUL, at `buffer` (async-signal-safe: no stdio).
static void write_decimal(char *buffer, long value) {
    char digits[24];
    int count = 0;
    do {
        digits[count++] = (char)('0' + value % 10);
        value /= 10;
    } while (value > 0 && count < (int)sizeof(digits));
    for (int i = 0; i < count; i++) buffer[i] = digits[count - 1 - i];
    buffer[count] = '\0';
}

// Writes all of `size` bytes, retrying interrupted writes (async-signal-safe).
static int write_all(int fd, const void *bytes, size_t size) {
    const char *next = bytes;
    while (size > 0) {
        ssize_t written = write(fd, next, size);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) return -1;
        next += written;
        size -= (size_t)written;
    }
    return 0;
}

// Reads exactly `size` bytes; 0 when they came, -1 at end of file or on an error.
static int read_all(int fd, void *bytes, size_t size) {
    char *next = bytes;
    while (size > 0) {
        ssize_t got = read(fd, next, size);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return -1;
        next += got;
        size -= (size_t)got;
    }
    return 0;
}

// Closes the descriptors `first`...`last` (async-signal-safe: close_range(2), or close(2) one by one where the kernel
// lacks it).
static void close_descriptors(unsigned int first, unsigned int last) {
    if (first > last || syscall(SYS_close_range, first, last, 0U) == 0) return;
    unsigned int end = last > 65535 ? 65535 : last;
    for (unsigned int fd = first; fd <= end; fd++) close((int)fd);
}

// Closes every descriptor from `from` on but those in `keep` (sorted here, in place). Other libraries do not always ask
// for close-on-exec: SwiftNIO accepts connections without it, and a connection open in the running process at the
// fork must not stay open in the new one (its client would wait for an end of file that never comes).
static void close_all_from(int from, int *keep, int keep_count) {
    for (int i = 1; i < keep_count; i++) {
        for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
            int swap = keep[j - 1];
            keep[j - 1] = keep[j];
            keep[j] = swap;
        }
    }
    int next = from;
    for (int i = 0; i < keep_count; i++) {
        if (keep[i] < next) continue;
        if (keep[i] > next) close_descriptors((unsigned int)next, (unsigned int)(keep[i] - 1));
        next = keep[i] + 1;
    }
    close_descriptors((unsigned int)next, ~0U);
}

static int exit_code_of(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return -1;
}

// The program, in the keeper's child: async-signal-safe calls only. Never returns.
static void become_program(
    const char *path,
    char *const argv[],
    char *const envp[],
    int envp_count,
    char **child_envp,
    char **assignments,
    const size_t *prefix_lengths,
    int pid_name_count,
    const int *high,
    int fd_count,
    int exec_report
) {
    sigset_t none;
    sigemptyset(&none);
    struct sigaction standard;
    memset(&standard, 0, sizeof(standard));
    standard.sa_handler = SIG_DFL;
    for (int signal_number = 1; signal_number < NSIG; signal_number++) {
        if (signal_number != SIGKILL && signal_number != SIGSTOP) sigaction(signal_number, &standard, NULL);
    }
    sigprocmask(SIG_SETMASK, &none, NULL);
    // The report pipe may sit where a passed descriptor goes: move it above them first.
    if (exec_report < 3 + fd_count) exec_report = fcntl(exec_report, F_DUPFD_CLOEXEC, 3 + fd_count);
    for (int i = 0; i < fd_count; i++) {
        if (dup2(high[i], 3 + i) < 0) {
            int error = errno;
            (void)write_all(exec_report, &error, sizeof(error));
            _exit(127);
        }
    }
    // Nothing but what was passed and the exec report (close-on-exec itself) reaches the new program.
    int keep[1] = {exec_report};
    close_all_from(3 + fd_count, keep, 1);
    long own = (long)getpid();
    int count = 0;
    for (int i = 0; i < envp_count; i++) {
        int replaced = 0;
        for (int j = 0; j < pid_name_count; j++) {
            if (strncmp(envp[i], assignments[j], prefix_lengths[j]) == 0) replaced = 1;
        }
        if (!replaced) child_envp[count++] = envp[i];
    }
    for (int j = 0; j < pid_name_count; j++) {
        write_decimal(assignments[j] + prefix_lengths[j], own);
        child_envp[count++] = assignments[j];
    }
    child_envp[count] = NULL;
    execve(path, argv, child_envp);
    int error = errno;
    (void)write_all(exec_report, &error, sizeof(error));
    _exit(127);
}

int clifecycle_spawn_kept(const char *path, char *const argv[], char *const envp[], const char *const pid_names[],
                          int pid_name_count, const int fds[], int fd_count, clifecycle_kept *kept) {
    int envp_count = 0;
    while (envp[envp_count] != NULL) envp_count++;

    // Everything the keeper and the program touch is allocated now, before the fork.
    char **child_envp = calloc((size_t)(envp_count + pid_name_count + 1), sizeof(char *));
    char **assignments = calloc((size_t)(pid_name_count > 0 ? pid_name_count : 1), sizeof(char *));
    size_t *prefix_lengths = calloc((size_t)(pid_name_count > 0 ? pid_name_count : 1), sizeof(size_t));
    int *high = calloc((size_t)(fd_count > 0 ? fd_count : 1), sizeof(int));
    int *keeper_keeps = calloc((size_t)(fd_count + 3), sizeof(int));
    int result = 0;
    if (child_envp == NULL || assignments == NULL || prefix_lengths == NULL || high == NULL || keeper_keeps == NULL) {
        result = -ENOMEM;
    }
    for (int i = 0; result == 0 && i < pid_name_count; i++) {
        size_t name_length = strlen(pid_names[i]);
        prefix_lengths[i] = name_length + 1;
        assignments[i] = malloc(name_length + 1 + 24);
        if (assignments[i] == NULL) {
            result = -ENOMEM;
            break;
        }
        memcpy(assignments[i], pid_names[i], name_length);
        assignments[i][name_length] = '=';
    }
    // The descriptors to pass are first copied above the range 3..3+fd_count, so that moving them into place never
    // overwrites one not moved yet.
    for (int i = 0; result == 0 && i < fd_count; i++) {
        high[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3 + fd_count);
        if (high[i] < 0) result = -errno;
    }
    // exec_report: the program's errno if its exec fails (end of file once it has exec'ed); release: this process to
    // the keeper; status: the keeper to this process (the program's pid, then its exit code if it exits first).
    int exec_report[2] = {-1, -1}, release[2] = {-1, -1}, status[2] = {-1, -1};
    if (result == 0 && (pipe2(exec_report, O_CLOEXEC) != 0 || pipe2(release, O_CLOEXEC) != 0 || pipe2(status, O_CLOEXEC) != 0)) {
        result = -errno;
    }

    pid_t keeper = -1;
    if (result == 0) {
        keeper = fork();
        if (keeper < 0) result = -errno;
    }
    if (keeper == 0) {
        // The keeper: async-signal-safe calls only. It keeps the signal mask it inherited (the daemon's signals
        // blocked), so a signal meant for the service never ends it before it is released.
        close(release[1]);
        close(status[0]);
        close(exec_report[0]);
        // The keeper holds nothing of the running process but what it passes on and its own pipes (the list was
        // allocated before the fork).
        keeper_keeps[0] = release[0];
        keeper_keeps[1] = status[1];
        keeper_keeps[2] = exec_report[1];
        for (int i = 0; i < fd_count; i++) keeper_keeps[3 + i] = high[i];
        close_all_from(3, keeper_keeps, 3 + fd_count);
        pid_t program = fork();
        if (program == 0) {
            close(status[1]);
            close(release[0]);
            become_program(
                path, argv, envp, envp_count, child_envp, assignments, prefix_lengths, pid_name_count, high, fd_count,
                exec_report[1]
            );
        }
        close(exec_report[1]);
        if (program < 0) {
            int error = errno;
            int negative = -error;
            (void)write_all(status[1], &negative, sizeof(negative));
            _exit(1);
        }
        int own = (int)program;
        (void)write_all(status[1], &own, sizeof(own));
        for (;;) {
            int code = 0;
            int wait_status = 0;
            pid_t waited = waitpid(program, &wait_status, WNOHANG);
            if (waited == program) {
                code = exit_code_of(wait_status);
                (void)write_all(status[1], &code, sizeof(code));
                _exit(0);
            }
            struct pollfd released = {.fd = release[0], .events = POLLIN};
            int ready = poll(&released, 1, 20);
            if (ready > 0) _exit(0);
        }
    }

    if (keeper > 0) {
        close(exec_report[1]);
        exec_report[1] = -1;
        close(release[0]);
        release[0] = -1;
        close(status[1]);
        status[1] = -1;
        int program = 0;
        if (read_all(status[0], &program, sizeof(program)) != 0 || program <= 0) {
            int code;
            while (waitpid(keeper, &code, 0) < 0 && errno == EINTR) {}
            result = program < 0 ? program : -ECHILD;
        } else {
            int error = 0;
            if (read_all(exec_report[0], &error, sizeof(error)) == 0) {
                // The exec failed: the program has exited; so will the keeper, once it has said so.
                int code;
                while (waitpid(keeper, &code, 0) < 0 && errno == EINTR) {}
                result = -error;
            } else {
                kept->pid = program;
                kept->keeper = keeper;
                kept->release_fd = release[1];
                kept->status_fd = status[0];
                release[1] = -1;
                status[0] = -1;
            }
        }
    }
    int descriptors[] = {exec_report[0], exec_report[1], release[0], release[1], status[0], status[1]};
    for (size_t i = 0; i < sizeof(descriptors) / sizeof(descriptors[0]); i++) {
        if (descriptors[i] >= 0) close(descriptors[i]);
    }
    for (int i = 0; high != NULL && i < fd_count; i++) {
        if (high[i] > 0) close(high[i]);
    }
    for (int i = 0; assignments != NULL && i < pid_name_count; i++) free(assignments[i]);
    free(assignments);
    free(prefix_lengths);
    free(high);
    free(keeper_keeps);
    free(child_envp);
    return result;
}

pid_t clifecycle_wait(pid_t pid, int *exit_code, int options) {
    int status = 0;
    pid_t result;
    do {
        result = waitpid(pid, &status, options);
    } while (result < 0 && errno == EINTR);
    if (result < 0) return -errno;
    if (result > 0) *exit_code = exit_code_of(status);
    return result;
}

int clifecycle_pidfd_open(pid_t pid) {
    long result = syscall(SYS_pidfd_open, pid, 0);
    if (result < 0) return -errno;
    int descriptor = (int)result;
    fcntl(descriptor, F_SETFD, FD_CLOEXEC);
    return descriptor;
}
