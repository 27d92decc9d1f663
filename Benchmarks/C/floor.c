//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// The floor of the latency benchmark: the least a Linux process can do to see a signal on its main loop.
// SIGUSR1 and SIGTERM are blocked and read from a signalfd watched by epoll; each SIGUSR1 stamps the time first
// thing (bench_stamp), SIGTERM exits 0. READY=1 goes to $NOTIFY_SOCKET once the loop is set up.
// Built with cc by scripts/bench, so it carries no Swift runtime: only libc.
#define _GNU_SOURCE
#include "CBenchSupport.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

int main(void) {
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGUSR1);
    sigaddset(&mask, SIGTERM);
    if (sigprocmask(SIG_BLOCK, &mask, NULL) != 0) {
        perror("lifecycle-bench-floor: sigprocmask");
        return 71;
    }
    int attached = bench_attach_from_environment();
    if (attached < 0) {
        fprintf(stderr, "lifecycle-bench-floor: cannot map $%s: errno %d\n", BENCH_SHM_ENVIRONMENT, -attached);
        return 71;
    }
    int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    int epfd = epoll_create1(EPOLL_CLOEXEC);
    if (sfd < 0 || epfd < 0) {
        perror("lifecycle-bench-floor: signalfd/epoll_create1");
        return 71;
    }
    struct epoll_event watch = {.events = EPOLLIN, .data.fd = sfd};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, sfd, &watch) != 0) {
        perror("lifecycle-bench-floor: epoll_ctl");
        return 71;
    }
    bench_notify("READY=1");
    for (;;) {
        struct epoll_event ready;
        int count = epoll_wait(epfd, &ready, 1, -1);
        if (count < 0) {
            if (errno == EINTR) continue;
            perror("lifecycle-bench-floor: epoll_wait");
            return 71;
        }
        struct signalfd_siginfo info;
        while (read(sfd, &info, sizeof(info)) == (ssize_t)sizeof(info)) {
            if (info.ssi_signo == SIGUSR1) {
                bench_stamp();
            } else if (info.ssi_signo == SIGTERM) {
                bench_notify("STOPPING=1");
                return 0;
            }
        }
    }
}
