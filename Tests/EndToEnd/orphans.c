//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// orphans COUNT GO_FILE: forks COUNT children, prints their pids and exits at once, so the children are orphans and
// the kernel re-parents them to the nearest reaper: in a container run with `podman exec`, its PID 1 (the processes
// above this one are outside the container's PID namespace). Each child waits until it has been re-parented, then
// until GO_FILE exists (at most 30 s), then exits: from then on only its new parent's waitpid(2) removes it, and a
// PID 1 that never reaps keeps it as a zombie. test_container.py builds it static (`cc -static`) and copies it into
// the image, which has no shell and no libc of its own to spare.

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 3 || atoi(argv[1]) < 1) {
        fprintf(stderr, "usage: orphans COUNT GO_FILE\n");
        return 64;
    }
    int count = atoi(argv[1]);
    pid_t parent = getpid();
    for (int i = 0; i < count; i++) {
        pid_t child = fork();
        if (child < 0) {
            perror("fork");
            return 71;
        }
        if (child == 0) {
            while (getppid() == parent) {
                usleep(1000);
            }
            for (int waited = 0; waited < 30000 && access(argv[2], F_OK) != 0; waited += 10) {
                usleep(10000);
            }
            _exit(0);
        }
        printf("%d\n", (int)child);
    }
    return 0;
}
