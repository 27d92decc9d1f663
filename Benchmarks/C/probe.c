//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// lifecycle-bench-probe: the measuring side of the process-level benchmarks.
//
//   lifecycle-bench-probe shm-create PATH CAPACITY
//       Creates the shared memory the receivers stamp into (a file, normally under /dev/shm).
//   lifecycle-bench-probe latency --pid PID --shm PATH --count N [--warmup W] [--interval-us U]
//                                 [--timeout-ms T] --out FILE
//       Sends W + N SIGUSR1 with sigqueue(3). Before each, it writes CLOCK_MONOTONIC and the sequence number into
//       the shared memory; the receiver stamps first thing in its callback (bench_stamp). Sends are at least U µs
//       apart (default 1000) plus a random 0-250 µs, and each waits until the previous one was seen (or T ms
//       passed: counted as lost), so standard-signal coalescing never hides a send. Writes the N latencies
//       after the warm-up to FILE, one per line in nanoseconds; prints "sent= seen= lost=".
//   lifecycle-bench-probe launch --runs R [--settle-ms S] [--child-output FILE] -- COMMAND [ARG...]
//       R times: binds a NOTIFY_SOCKET, execs COMMAND with it, times exec -> READY=1, waits S ms (default 200),
//       reads VmRSS (and its RssAnon/RssFile split), then times SIGTERM -> exit (waitpid). Descriptors sent with
//       FDSTORE=1 are kept until the run's exit has been timed, then closed, as systemd's file descriptor store holds
//       them until the service stops. Prints one line per run:
//       "ready_ns=… rss_kib=… rss_anon_kib=… rss_file_kib=… terminate_ns=… status=…".
//   lifecycle-bench-probe scaling --shm PATH [--events E] [--settle-ms S] [--ready-timeout-ms T]
//                                 [--timeout-ms T] -- COMMAND [ARG...]
//       One run of the scaling benchmark (lifecycle-bench-daemon --controllers N): creates the shared memory PATH,
//       execs COMMAND with $LIFECYCLE_BENCH_SHM=PATH and a NOTIFY_SOCKET, times exec -> READY=1, waits S ms (default
//       500), reads the RSS, then E times (default 5) SIGUSR1 -> stamp (memory warning: the delegate stamps after the
//       whole tree), then E times SIGHUP -> stamp (reload; the daemon marks every view for layout at bench_mark and
//       stamps after the pass), reads the RSS again, then times SIGTERM -> exit. Each signal waits for the previous
//       stamp (or T ms, default 60000: counted as lost), then for half as long again plus 10 ms, so the daemon has
//       finished the dispatch. Prints one line: "ready_ns=… rss_kib=… rss_anon_kib=… rss_file_kib=…
//       fanout_ns=A,B,… reload_ns=… layout_ns=… rss_after_kib=… terminate_ns=… lost=… status=…" (layout_ns: mark ->
//       stamp of each reload).
//
// Built with cc by scripts/bench (no Swift runtime), like the floor.
#define _GNU_SOURCE
#include "CBenchSupport.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

// The descriptors a child sent with its notifications (FDSTORE=1), held as systemd's store holds them.
static int kept_fds[64];
static int kept_count = 0;

// recv(2) of one notification, keeping the descriptors it carries (SCM_RIGHTS) in kept_fds.
static ssize_t receive_notification(int sock, char *buffer, size_t capacity, int flags) {
    struct iovec vector = {.iov_base = buffer, .iov_len = capacity};
    union {
        struct cmsghdr align;
        char space[CMSG_SPACE(sizeof(int) * 16)];
    } control;
    struct msghdr message = {
        .msg_iov = &vector, .msg_iovlen = 1, .msg_control = control.space, .msg_controllen = sizeof(control.space)};
    ssize_t length = recvmsg(sock, &message, flags | MSG_CMSG_CLOEXEC);
    if (length < 0) return length;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header != NULL; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int *descriptors = (int *)CMSG_DATA(header);
        for (size_t index = 0; index < count; index++) {
            if (kept_count < (int)(sizeof(kept_fds) / sizeof(kept_fds[0]))) {
                kept_fds[kept_count++] = descriptors[index];
            } else {
                close(descriptors[index]);
            }
        }
    }
    return length;
}

// Closes what the store held: the service stopped.
static void release_kept_fds(void) {
    for (int index = 0; index < kept_count; index++) close(kept_fds[index]);
    kept_count = 0;
}

static void die(const char *what) {
    fprintf(stderr, "lifecycle-bench-probe: %s: %s\n", what, strerror(errno));
    exit(71);
}

static void usage(const char *message) {
    fprintf(stderr, "lifecycle-bench-probe: %s (see the comment at the top of main.c)\n", message);
    exit(64);
}

static void sleep_until(uint64_t deadline_ns) {
    struct timespec at = {
        .tv_sec = (time_t)(deadline_ns / 1000000000ULL),
        .tv_nsec = (long)(deadline_ns % 1000000000ULL),
    };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR) {
    }
}

static struct bench_shm *map_shm(const char *path, int create, uint64_t capacity) {
    int fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_TRUNC : 0), 0600);
    if (fd < 0) die(path);
    if (create) {
        if (ftruncate(fd, (off_t)bench_shm_size(capacity)) != 0) die("ftruncate");
    } else {
        struct bench_shm header;
        if (pread(fd, &header, sizeof(header), 0) != (ssize_t)sizeof(header)) die("read shm header");
        if (header.magic != BENCH_SHM_MAGIC) {
            errno = EINVAL;
            die("shm magic");
        }
        capacity = header.capacity;
    }
    struct bench_shm *region =
        mmap(NULL, (size_t)bench_shm_size(capacity), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (region == MAP_FAILED) die("mmap");
    close(fd);
    if (create) {
        region->capacity = capacity;
        __atomic_store_n(&region->magic, BENCH_SHM_MAGIC, __ATOMIC_RELEASE);
    }
    return region;
}

static int command_shm_create(int argc, char **argv) {
    if (argc != 2) usage("shm-create PATH CAPACITY");
    uint64_t capacity = strtoull(argv[1], NULL, 10);
    if (capacity == 0) usage("CAPACITY must be positive");
    map_shm(argv[0], 1, capacity);
    return 0;
}

static uint64_t random_state = 0x9e3779b97f4a7c15ULL;

static uint64_t next_random(void) {
    random_state ^= random_state << 13;
    random_state ^= random_state >> 7;
    random_state ^= random_state << 17;
    return random_state;
}

static int command_latency(int argc, char **argv) {
    pid_t pid = 0;
    const char *shm_path = NULL, *out_path = NULL;
    uint64_t count = 0, warmup = 100, interval_us = 1000, timeout_ms = 1000;
    for (int i = 0; i < argc; i++) {
        if (i + 1 >= argc) usage("an option needs a value");
        if (strcmp(argv[i], "--pid") == 0) pid = (pid_t)atoi(argv[++i]);
        else if (strcmp(argv[i], "--shm") == 0) shm_path = argv[++i];
        else if (strcmp(argv[i], "--count") == 0) count = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--warmup") == 0) warmup = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--interval-us") == 0) interval_us = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--timeout-ms") == 0) timeout_ms = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--out") == 0) out_path = argv[++i];
        else usage("unknown latency option");
    }
    if (pid <= 0 || shm_path == NULL || out_path == NULL || count == 0) {
        usage("latency needs --pid, --shm, --count, --out");
    }
    if (interval_us < 1000) usage("--interval-us below 1000 would not pace sends 1 ms apart");
    struct bench_shm *region = map_shm(shm_path, 0, 0);
    uint64_t total = warmup + count;
    if (total >= region->capacity) usage("the shared memory is too small for warm-up + count");
    memset(region->latency_ns, 0, (size_t)(region->capacity * sizeof(uint64_t)));
    __atomic_store_n(&region->seen, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&region->seq, 0, __ATOMIC_RELEASE);
    random_state ^= (uint64_t)getpid() << 32 ^ bench_monotonic_ns();

    uint64_t lost = 0;
    uint64_t next_send = bench_monotonic_ns();
    for (uint64_t seq = 1; seq <= total; seq++) {
        sleep_until(next_send);
        uint64_t sent = bench_monotonic_ns();
        __atomic_store_n(&region->sent_ns, sent, __ATOMIC_RELAXED);
        __atomic_store_n(&region->seq, seq, __ATOMIC_RELEASE);
        union sigval value = {.sival_int = (int)seq};
        if (sigqueue(pid, SIGUSR1, value) != 0) die("sigqueue");
        // Pace: at least the interval, and only after the receiver saw this one.
        sleep_until(sent + interval_us * 1000ULL);
        uint64_t deadline = sent + timeout_ms * 1000000ULL;
        while (__atomic_load_n(&region->seen, __ATOMIC_ACQUIRE) != seq) {
            uint64_t now = bench_monotonic_ns();
            if (now > deadline) {
                lost++;
                break;
            }
            sleep_until(now + 100000ULL);
        }
        next_send = bench_monotonic_ns() + next_random() % 250000ULL;
    }

    FILE *out = fopen(out_path, "w");
    if (out == NULL) die(out_path);
    uint64_t seen = 0;
    for (uint64_t seq = warmup + 1; seq <= total; seq++) {
        uint64_t latency = region->latency_ns[seq];
        if (latency == 0) continue;
        fprintf(out, "%llu\n", (unsigned long long)latency);
        seen++;
    }
    if (fclose(out) != 0) die(out_path);
    printf("sent=%llu seen=%llu lost=%llu\n", (unsigned long long)count, (unsigned long long)seen,
           (unsigned long long)lost);
    return 0;
}

struct memory_kib {
    long rss, anon, file;
};

// VmRSS and its split into anonymous memory (heap, stacks: the process's own) and file pages (mapped libraries,
// shared with every other process using them).
static struct memory_kib read_memory_kib(pid_t pid) {
    struct memory_kib memory = {-1, -1, -1};
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *file = fopen(path, "r");
    if (file == NULL) return memory;
    char line[256];
    while (fgets(line, sizeof(line), file) != NULL) {
        if (strncmp(line, "VmRSS:", 6) == 0) memory.rss = strtol(line + 6, NULL, 10);
        else if (strncmp(line, "RssAnon:", 8) == 0) memory.anon = strtol(line + 8, NULL, 10);
        else if (strncmp(line, "RssFile:", 8) == 0) memory.file = strtol(line + 8, NULL, 10);
    }
    fclose(file);
    return memory;
}

static int has_line(const char *message, const char *wanted) {
    size_t length = strlen(wanted);
    for (const char *line = message; line != NULL && *line != '\0';) {
        if (strncmp(line, wanted, length) == 0 && (line[length] == '\n' || line[length] == '\0')) return 1;
        line = strchr(line, '\n');
        if (line != NULL) line++;
    }
    return 0;
}

static int command_launch(int argc, char **argv) {
    int runs = 1;
    long settle_ms = 200;
    const char *child_output = "/dev/null";
    int i = 0;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (i + 1 >= argc) usage("an option needs a value");
        if (strcmp(argv[i], "--runs") == 0) runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--settle-ms") == 0) settle_ms = atol(argv[++i]);
        else if (strcmp(argv[i], "--child-output") == 0) child_output = argv[++i];
        else usage("unknown launch option");
    }
    if (i >= argc - 1 || runs <= 0) usage("launch needs --runs R -- COMMAND");
    char **command = argv + i + 1;

    char directory[] = "/tmp/lifecycle-bench.XXXXXX";
    if (mkdtemp(directory) == NULL) die("mkdtemp");
    char socket_path[sizeof(directory) + 16];
    snprintf(socket_path, sizeof(socket_path), "%s/notify", directory);
    int sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sock < 0) die("socket");
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    strncpy(address.sun_path, socket_path, sizeof(address.sun_path) - 1);
    if (bind(sock, (struct sockaddr *)&address, sizeof(address)) != 0) die("bind");
    if (setenv("NOTIFY_SOCKET", socket_path, 1) != 0) die("setenv");

    int status_code = 0;
    for (int run = 0; run < runs; run++) {
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, child_output, O_WRONLY | O_CREAT | O_APPEND, 0644);
        posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
        pid_t pid;
        uint64_t start = bench_monotonic_ns();
        int spawned = posix_spawn(&pid, command[0], &actions, NULL, command, environ);
        posix_spawn_file_actions_destroy(&actions);
        if (spawned != 0) {
            errno = spawned;
            die(command[0]);
        }
        uint64_t ready = 0;
        char message[4096];
        while (ready == 0) {
            struct pollfd watch = {.fd = sock, .events = POLLIN};
            int polled = poll(&watch, 1, 10000);
            if (polled < 0 && errno == EINTR) continue;
            if (polled <= 0) {
                fprintf(stderr, "lifecycle-bench-probe: no READY=1 from %s within 10 s\n", command[0]);
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                return 70;
            }
            ssize_t length = receive_notification(sock, message, sizeof(message) - 1, 0);
            if (length < 0) die("recv");
            message[length] = '\0';
            if (has_line(message, "READY=1")) ready = bench_monotonic_ns();
        }
        sleep_until(ready + (uint64_t)settle_ms * 1000000ULL);
        struct memory_kib memory = read_memory_kib(pid);
        // Drain what the child said meanwhile (STATUS=, WATCHDOG=1), so the next run reads only its own messages.
        while (receive_notification(sock, message, sizeof(message), MSG_DONTWAIT) > 0) {
        }
        uint64_t kill_at = bench_monotonic_ns();
        if (kill(pid, SIGTERM) != 0) die("kill");
        int status;
        while (waitpid(pid, &status, 0) < 0) {
            if (errno != EINTR) die("waitpid");
        }
        uint64_t exited = bench_monotonic_ns();
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (code != 0) status_code = 1;
        printf("ready_ns=%llu rss_kib=%ld rss_anon_kib=%ld rss_file_kib=%ld terminate_ns=%llu status=%d\n",
               (unsigned long long)(ready - start), memory.rss, memory.anon, memory.file,
               (unsigned long long)(exited - kill_at), code);
        fflush(stdout);
        while (receive_notification(sock, message, sizeof(message), MSG_DONTWAIT) > 0) {
        }
        release_kept_fds();
    }
    close(sock);
    unlink(socket_path);
    rmdir(directory);
    return status_code;
}

// The scaling benchmark (see the top of the file): one daemon, its launch, E memory warnings, E reloads with a
// layout pass, its termination.

static pid_t spawn_with_output(char **command, const char *child_output) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, child_output, O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    pid_t pid;
    int spawned = posix_spawn(&pid, command[0], &actions, NULL, command, environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) {
        errno = spawned;
        die(command[0]);
    }
    return pid;
}

// Waits for a datagram with READY=1 on `sock`; returns its arrival time, or 0 after `timeout_ms`.
static uint64_t wait_ready(int sock, uint64_t timeout_ms) {
    uint64_t deadline = bench_monotonic_ns() + timeout_ms * 1000000ULL;
    char message[4096];
    for (;;) {
        uint64_t now = bench_monotonic_ns();
        if (now >= deadline) return 0;
        struct pollfd watch = {.fd = sock, .events = POLLIN};
        int polled = poll(&watch, 1, (int)((deadline - now) / 1000000ULL) + 1);
        if (polled < 0 && errno == EINTR) continue;
        if (polled < 0) die("poll");
        if (polled == 0) continue;
        ssize_t length = recv(sock, message, sizeof(message) - 1, 0);
        if (length < 0) die("recv");
        message[length] = '\0';
        if (has_line(message, "READY=1")) return bench_monotonic_ns();
    }
}

static void drain(int sock) {
    char message[4096];
    while (recv(sock, message, sizeof(message), MSG_DONTWAIT) > 0) {
    }
}

// Sends `signo` with the next sequence number and waits for its stamp; returns the latency (0: lost). Waits
// afterwards for half the latency plus 10 ms, so the dispatch that stamped has ended before the next signal.
static uint64_t signal_and_wait(struct bench_shm *region, pid_t pid, int signo, uint64_t seq, uint64_t timeout_ms) {
    uint64_t sent = bench_monotonic_ns();
    __atomic_store_n(&region->sent_ns, sent, __ATOMIC_RELAXED);
    __atomic_store_n(&region->seq, seq, __ATOMIC_RELEASE);
    union sigval value = {.sival_int = (int)seq};
    if (sigqueue(pid, signo, value) != 0) die("sigqueue");
    uint64_t deadline = sent + timeout_ms * 1000000ULL;
    while (__atomic_load_n(&region->seen, __ATOMIC_ACQUIRE) != seq) {
        uint64_t now = bench_monotonic_ns();
        if (now > deadline) return 0;
        sleep_until(now + 50000ULL);
    }
    uint64_t latency = region->latency_ns[seq];
    sleep_until(bench_monotonic_ns() + latency / 2 + 10000000ULL);
    return latency;
}

static void print_list(const char *name, const uint64_t *values, int count) {
    printf(" %s=", name);
    for (int i = 0; i < count; i++) printf("%s%llu", i ? "," : "", (unsigned long long)values[i]);
}

static int command_scaling(int argc, char **argv) {
    const char *shm_path = NULL, *child_output = "/dev/null";
    int events = 5;
    long settle_ms = 500;
    uint64_t ready_timeout_ms = 60000, timeout_ms = 60000;
    int i = 0;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (i + 1 >= argc) usage("an option needs a value");
        if (strcmp(argv[i], "--shm") == 0) shm_path = argv[++i];
        else if (strcmp(argv[i], "--events") == 0) events = atoi(argv[++i]);
        else if (strcmp(argv[i], "--settle-ms") == 0) settle_ms = atol(argv[++i]);
        else if (strcmp(argv[i], "--ready-timeout-ms") == 0) ready_timeout_ms = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--timeout-ms") == 0) timeout_ms = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--child-output") == 0) child_output = argv[++i];
        else usage("unknown scaling option");
    }
    if (i >= argc - 1 || shm_path == NULL || events <= 0 || events > 1000) {
        usage("scaling needs --shm PATH [--events 1..1000] -- COMMAND");
    }
    char **command = argv + i + 1;
    struct bench_shm *region = map_shm(shm_path, 1, (uint64_t)(2 * events + 16));
    if (setenv(BENCH_SHM_ENVIRONMENT, shm_path, 1) != 0) die("setenv");

    char directory[] = "/tmp/lifecycle-bench.XXXXXX";
    if (mkdtemp(directory) == NULL) die("mkdtemp");
    char socket_path[sizeof(directory) + 16];
    snprintf(socket_path, sizeof(socket_path), "%s/notify", directory);
    int sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sock < 0) die("socket");
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    strncpy(address.sun_path, socket_path, sizeof(address.sun_path) - 1);
    if (bind(sock, (struct sockaddr *)&address, sizeof(address)) != 0) die("bind");
    if (setenv("NOTIFY_SOCKET", socket_path, 1) != 0) die("setenv");

    uint64_t start = bench_monotonic_ns();
    pid_t pid = spawn_with_output(command, child_output);
    uint64_t ready = wait_ready(sock, ready_timeout_ms);
    if (ready == 0) {
        fprintf(stderr, "lifecycle-bench-probe: no READY=1 from %s within %llu ms\n", command[0],
                (unsigned long long)ready_timeout_ms);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return 70;
    }
    sleep_until(ready + (uint64_t)settle_ms * 1000000ULL);
    struct memory_kib memory = read_memory_kib(pid);
    drain(sock);

    uint64_t fanout[1000], reload[1000], layout[1000];
    uint64_t seq = 0, lost = 0;
    for (int e = 0; e < events; e++) {
        fanout[e] = signal_and_wait(region, pid, SIGUSR1, ++seq, timeout_ms);
        if (fanout[e] == 0) lost++;
        drain(sock);
    }
    for (int e = 0; e < events; e++) {
        uint64_t sent_seq = ++seq;
        reload[e] = signal_and_wait(region, pid, SIGHUP, sent_seq, timeout_ms);
        layout[e] = 0;
        if (reload[e] == 0) {
            lost++;
        } else if (__atomic_load_n(&region->mark_seq, __ATOMIC_ACQUIRE) == sent_seq) {
            uint64_t stamped = __atomic_load_n(&region->sent_ns, __ATOMIC_RELAXED) + reload[e];
            uint64_t marked = __atomic_load_n(&region->mark_ns, __ATOMIC_RELAXED);
            layout[e] = stamped > marked ? stamped - marked : 0;
        }
        drain(sock);
    }
    struct memory_kib after = read_memory_kib(pid);

    uint64_t kill_at = bench_monotonic_ns();
    if (kill(pid, SIGTERM) != 0) die("kill");
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) die("waitpid");
    }
    uint64_t exited = bench_monotonic_ns();
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    printf("ready_ns=%llu rss_kib=%ld rss_anon_kib=%ld rss_file_kib=%ld", (unsigned long long)(ready - start),
           memory.rss, memory.anon, memory.file);
    print_list("fanout_ns", fanout, events);
    print_list("reload_ns", reload, events);
    print_list("layout_ns", layout, events);
    printf(" rss_after_kib=%ld terminate_ns=%llu lost=%llu status=%d\n", after.rss,
           (unsigned long long)(exited - kill_at), (unsigned long long)lost, code);
    close(sock);
    unlink(socket_path);
    rmdir(directory);
    unlink(shm_path);
    return code == 0 && lost == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc < 2) usage("missing command: shm-create, latency, launch or scaling");
    if (strcmp(argv[1], "shm-create") == 0) return command_shm_create(argc - 2, argv + 2);
    if (strcmp(argv[1], "latency") == 0) return command_latency(argc - 2, argv + 2);
    if (strcmp(argv[1], "launch") == 0) return command_launch(argc - 2, argv + 2);
    if (strcmp(argv[1], "scaling") == 0) return command_scaling(argc - 2, argv + 2);
    usage("unknown command");
    return 64;
}
