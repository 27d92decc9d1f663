#ifndef LIFECYCLEKIT_CSYSTEMD_SHIM_H
#define LIFECYCLEKIT_CSYSTEMD_SHIM_H

#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <systemd/sd-journal.h>
#include <systemd/sd-bus.h>
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <string.h>
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

#endif
