//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

#ifndef LIFECYCLE_BENCH_SUPPORT_H
#define LIFECYCLE_BENCH_SUPPORT_H

// What every signal receiver of the latency benchmark shares, so the floor (C), the daemon and the peer pay exactly
// the same for being measured: one clock_gettime and four stores into a shared page.
//
// The sender (lifecycle-bench-probe latency) writes CLOCK_MONOTONIC and a sequence number into the shared memory,
// then sigqueue()s SIGUSR1. The receiver calls bench_stamp() first thing in the callback that the signal causes;
// bench_stamp reads the clock, stores now - sent into latency_ns[seq] and publishes `seen = seq`. The sender waits
// for `seen` before it sends the next signal, so signals never coalesce and every one is measured.

#include <stdint.h>

#define BENCH_SHM_MAGIC 0x4c4643424e434831ULL  // "LFCBNCH1"
#define BENCH_SHM_ENVIRONMENT "LIFECYCLE_BENCH_SHM"

struct bench_shm {
    uint64_t magic;
    uint64_t capacity;       // entries in latency_ns
    uint64_t seq;            // the last sequence number sent (written before sent_ns's signal goes out)
    uint64_t sent_ns;        // CLOCK_MONOTONIC when `seq` was sent
    uint64_t seen;           // the last sequence number a receiver stamped
    uint64_t stamps;         // how many stamps the receiver made (duplicates included)
    uint64_t mark_ns;        // bench_mark: CLOCK_MONOTONIC of an intermediate point of the work `seq` caused
    uint64_t mark_seq;       // bench_mark: the sequence number mark_ns belongs to
    uint64_t latency_ns[];   // by sequence number; 0 = not seen
};

/// The size of a shared region holding `capacity` latencies.
uint64_t bench_shm_size(uint64_t capacity);

/// Maps the region named by $LIFECYCLE_BENCH_SHM (a file, normally under /dev/shm) for bench_stamp.
/// Returns 0 when mapped, 1 when the variable is unset (bench_stamp is then a no-op), or -errno.
int bench_attach_from_environment(void);

/// Records the latency of the signal being handled. Call it first thing in the callback.
void bench_stamp(void);

/// Records the time of an intermediate point of the work the signal being handled caused (the scaling benchmark's
/// layout pass starts here; bench_stamp then marks its end). Does not publish `seen`.
void bench_mark(void);

/// CLOCK_MONOTONIC in nanoseconds.
uint64_t bench_monotonic_ns(void);

/// Sends one sd_notify datagram (e.g. "READY=1") to $NOTIFY_SOCKET, without libsystemd.
/// Returns 0 when sent, 1 when $NOTIFY_SOCKET is unset, or -errno.
int bench_notify(const char *message);

/// Blocks the signal in the calling thread (before any other thread exists, so that every thread inherits it).
int bench_block_signal(int signo);

/// The bytes of the C heap in use (glibc's mallinfo2: every Swift object is allocated there), for the scenes
/// benchmark's memory per session.
uint64_t bench_heap_in_use(void);

/// The process's resident set in bytes (/proc/self/statm), or 0 when it cannot be read.
uint64_t bench_resident_bytes(void);

#endif
