//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

#ifndef LIFECYCLEKIT_CSYSTEMD_SHIM_H
#define LIFECYCLEKIT_CSYSTEMD_SHIM_H

#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <systemd/sd-journal.h>
#include <systemd/sd-bus.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/memfd.h>
#include <malloc.h>
#include <signal.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

// libdispatch's private hooks for a foreign run loop that owns the main thread, as swift-corelibs-foundation's
// CFRunLoop uses them. They are exported by libdispatch.so but declared in no public header, and the Swift
// Dispatch module does not import them. On Linux dispatch_runloop_handle_t is an int: an eventfd that becomes
// readable when the main queue has work. The callback drains the main queue and must run on the main thread;
// its argument is a Mach message on Darwin and ignored here.
extern int _dispatch_get_main_queue_handle_4CF(void);
extern void _dispatch_main_queue_callback_4CF(void *msg);

// The file system type statfs(2) reports for a path (a *_SUPER_MAGIC), or -errno: Swift's Glibc module does not
// import <sys/statfs.h>.
static inline long csystemd_file_system_type(const char *path) {
    struct statfs info;
    if (statfs(path, &info) != 0) return -errno;
    return (long)info.f_type;
}

// glibc declares gettid() only under _GNU_SOURCE, which Swift's Glibc module does not define, and syscall() is
// variadic, so Swift cannot call either directly.
static inline pid_t csystemd_gettid(void) {
    return (pid_t)syscall(SYS_gettid);
}

// accept4(2) is declared by glibc only under _GNU_SOURCE as well: the control socket accepts non-blocking,
// close-on-exec connections in one call. Returns the descriptor, or -errno.
static inline int csystemd_accept4(int fd, int flags) {
    long result = syscall(SYS_accept4, fd, (void *)0, (void *)0, flags);
    return result < 0 ? -errno : (int)result;
}

// sigqueue(3) aimed at one thread of this process (what glibc's GNU-only pthread_sigqueue does): a process-directed
// signal may land on any thread that has it unblocked, a thread-directed one only on that thread.
// Returns 0, or -errno.
static inline int csystemd_thread_sigqueue(pid_t tid, int signo, int value) {
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    info.si_signo = signo;
    info.si_code = SI_QUEUE;
    info.si_pid = getpid();
    info.si_uid = getuid();
    info.si_value.sival_int = value;
    if (syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, signo, &info) < 0) {
        return -errno;
    }
    return 0;
}

// memfd_create(2) and file sealing for the file descriptor store: glibc declares memfd_create only under
// _GNU_SOURCE, and the sealing constants may be missing from older headers. Both return -errno on failure.
#ifndef F_ADD_SEALS
#define F_ADD_SEALS 1033
#endif
#ifndef F_SEAL_SEAL
#define F_SEAL_SEAL 0x0001
#define F_SEAL_SHRINK 0x0002
#define F_SEAL_GROW 0x0004
#define F_SEAL_WRITE 0x0008
#endif

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif

// MFD_NOEXEC_SEAL (Linux 6.3): the memfd is not executable and can never be made so (F_SEAL_EXEC), whatever
// vm.memfd_noexec says; older kernels refuse the flag with EINVAL, and then it is made without.
static inline int csystemd_memfd_create(const char *name) {
    int fd = (int)syscall(SYS_memfd_create, name, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
    if (fd < 0 && errno == EINVAL) {
        fd = (int)syscall(SYS_memfd_create, name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    }
    return fd < 0 ? -errno : fd;
}

// Seals a memfd so that nobody, the service manager included, can change, grow or shrink it any more.
static inline int csystemd_seal_memfd(int fd) {
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
        return -errno;
    }
    return 0;
}

// The journal writer's socket calls. In C, so that no Swift file of LifecycleSystemd names glibc's SOCK_* and MSG_*
// enumerators next to this module: a target that both imports this module and uses them finds them through it, and
// files that do not import it then cannot (MemoryPressureMonitor.swift imports it for that reason).

// An AF_UNIX datagram socket, close-on-exec, with SO_SNDBUF asked to be `send_buffer` and sends that wait (without
// MSG_DONTWAIT) at most `timeout_usec`. Returns the descriptor, or -errno.
static inline int csystemd_datagram_socket(int send_buffer, long timeout_usec) {
    int sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sock < 0) {
        return -errno;
    }
    (void)setsockopt(sock, SOL_SOCKET, SO_SNDBUF, &send_buffer, sizeof(send_buffer));
    struct timeval timeout = { .tv_sec = timeout_usec / 1000000, .tv_usec = timeout_usec % 1000000 };
    (void)setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    return sock;
}

// Sends one datagram to an AF_UNIX address, never raising SIGPIPE; without `wait`, never blocking (MSG_DONTWAIT).
// Returns the bytes sent, or -errno.
static inline long csystemd_send_datagram(int sock, const struct sockaddr *address, socklen_t length, const void *bytes,
                                          size_t count, int wait) {
    ssize_t sent = sendto(sock, bytes, count, MSG_NOSIGNAL | (wait ? 0 : MSG_DONTWAIT), address, length);
    return sent < 0 ? -errno : (long)sent;
}

// Sends one datagram carrying no bytes and one file descriptor (SCM_RIGHTS) to an AF_UNIX address: how a journald
// client hands over an entry too big for a datagram, in a sealed memfd. Returns the bytes sent (0), or -errno.
static inline int csystemd_send_descriptor(int sock, const struct sockaddr *address, socklen_t length, int fd, int wait) {
    int flags = wait ? 0 : MSG_DONTWAIT;
    union {
        struct cmsghdr header;
        char space[CMSG_SPACE(sizeof(int))];
    } control;
    memset(&control, 0, sizeof(control));
    struct msghdr message;
    memset(&message, 0, sizeof(message));
    message.msg_name = (void *)address;
    message.msg_namelen = length;
    message.msg_control = &control;
    message.msg_controllen = sizeof(control);
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &fd, sizeof(int));
    ssize_t sent = sendmsg(sock, &message, flags | MSG_NOSIGNAL);
    return sent < 0 ? -errno : (int)sent;
}

#endif
