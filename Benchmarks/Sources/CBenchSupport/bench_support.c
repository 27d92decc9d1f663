//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

#define _GNU_SOURCE
#include "CBenchSupport.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static struct bench_shm *shared;

uint64_t bench_shm_size(uint64_t capacity) {
    return sizeof(struct bench_shm) + capacity * sizeof(uint64_t);
}

uint64_t bench_monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
}

int bench_attach_from_environment(void) {
    const char *path = getenv(BENCH_SHM_ENVIRONMENT);
    if (path == NULL || path[0] == '\0') return 1;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return -errno;
    struct bench_shm header;
    if (pread(fd, &header, sizeof(header), 0) != (ssize_t)sizeof(header)) {
        int error = errno ? errno : EINVAL;
        close(fd);
        return -error;
    }
    if (header.magic != BENCH_SHM_MAGIC) {
        close(fd);
        return -EINVAL;
    }
    size_t size = (size_t)bench_shm_size(header.capacity);
    // MAP_POPULATE: no page fault inside a measured callback.
    void *mapped = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    int error = errno;
    close(fd);
    if (mapped == MAP_FAILED) return -error;
    shared = mapped;
    return 0;
}

void bench_stamp(void) {
    uint64_t now = bench_monotonic_ns();
    struct bench_shm *region = shared;
    if (region == NULL) return;
    uint64_t seq = __atomic_load_n(&region->seq, __ATOMIC_ACQUIRE);
    uint64_t sent = __atomic_load_n(&region->sent_ns, __ATOMIC_RELAXED);
    __atomic_store_n(&region->stamps, region->stamps + 1, __ATOMIC_RELAXED);
    if (seq == __atomic_load_n(&region->seen, __ATOMIC_RELAXED)) return;  // a stray or repeated delivery
    if (seq < region->capacity && now >= sent) region->latency_ns[seq] = now - sent;
    __atomic_store_n(&region->seen, seq, __ATOMIC_RELEASE);
}

void bench_mark(void) {
    uint64_t now = bench_monotonic_ns();
    struct bench_shm *region = shared;
    if (region == NULL) return;
    __atomic_store_n(&region->mark_ns, now, __ATOMIC_RELAXED);
    __atomic_store_n(&region->mark_seq, __atomic_load_n(&region->seq, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
}

int bench_notify(const char *message) {
    const char *path = getenv("NOTIFY_SOCKET");
    if (path == NULL || path[0] == '\0') return 1;
    struct sockaddr_un address;
    memset(&address, 0, sizeof(address));
    address.sun_family = AF_UNIX;
    size_t length = strlen(path);
    if (length >= sizeof(address.sun_path)) return -ENAMETOOLONG;
    memcpy(address.sun_path, path, length);
    if (path[0] == '@') address.sun_path[0] = '\0';  // abstract namespace, as sd_notify(3) accepts
    socklen_t address_length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + length);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    ssize_t sent = sendto(fd, message, strlen(message), MSG_NOSIGNAL, (struct sockaddr *)&address, address_length);
    int error = errno;
    close(fd);
    return sent < 0 ? -error : 0;
}

int bench_block_signal(int signo) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    int result = pthread_sigmask(SIG_BLOCK, &set, NULL);
    return result == 0 ? 0 : -result;
}

uint64_t bench_heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return (uint64_t)info.uordblks;
}

uint64_t bench_resident_bytes(void) {
    FILE *file = fopen("/proc/self/statm", "re");
    if (file == NULL) return 0;
    unsigned long size = 0, resident = 0;
    int fields = fscanf(file, "%lu %lu", &size, &resident);
    fclose(file);
    return fields == 2 ? (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}
