/*
 * System calls for run's guardian (guard.c) that write nothing but what
 * they are given: no errno, no libc state.
 *
 * Why: on x86-64 the guardian is cloned into run's own memory
 * (CLONE_VM), which spares the copy of run's page tables that a fork
 * makes and the copy-on-write faults after it, the largest single cost
 * of `run KEY -- true` beside flock(1) (issue 37). There, run and the
 * guardian run at once on one memory, and share even errno (a
 * thread-local that both reach through the same thread pointer): one
 * libc call of the guardian that fails could change run's errno between
 * run's failed call and its test of errno. So the guardian makes its
 * system calls here, which return -errno and touch no memory of libc's.
 *
 * Elsewhere the guardian is forked as before (CLI_SYS_SHARED is 0) and
 * the same calls go through libc: its memory is then its own.
 */
#ifndef RL_CLI_SYS_H
#define RL_CLI_SYS_H

#include <signal.h>
#include <sys/syscall.h>

/* ThreadSanitizer and MemorySanitizer keep per-thread state that their
 * instrumented code reaches through the thread pointer, which a guardian
 * in run's memory would share with run: their builds fork it. (The
 * AddressSanitizer's checks keep no such state, as long as its fake
 * stacks for use after return stay off, their default.) */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define CLI_SYS_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define CLI_SYS_SANITIZED 1
#endif

#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) &&          \
    !defined(CLI_SYS_SANITIZED)
#define CLI_SYS_SHARED 1
#else
#define CLI_SYS_SHARED 0
#endif

/* The size of the kernel's signal set, which is the first bytes of
 * libc's sigset_t (64 signals on most architectures, 128 on MIPS). */
#define CLI_SYS_SIGSET_BYTES ((_NSIG - 1) / 8)

/* 1 when the guardian is to share run's memory: CLI_SYS_SHARED, and not
 * under valgrind, which runs no clone of memory that is not a thread. */
int cli_sys_shared(void);

/* One system call: its result, or -errno. */
long cli_sys(long nr, long a, long b, long c, long d, long e, long f);

#define CLI_SYS1(n, a) cli_sys((n), (long)(a), 0, 0, 0, 0, 0)
#define CLI_SYS2(n, a, b) cli_sys((n), (long)(a), (long)(b), 0, 0, 0, 0)
#define CLI_SYS3(n, a, b, c)                                                   \
    cli_sys((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define CLI_SYS4(n, a, b, c, d)                                                \
    cli_sys((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define CLI_SYS6(n, a, b, c, d, e, f)                                          \
    cli_sys((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e),        \
            (long)(f))

/* Starts fn(arg) in a new process, on the stack that ends at stack_top,
 * with clone(2)'s flags (which must include the exit signal). Returns the
 * pid, or -errno. The new process exits with fn's value if fn returns. */
long cli_sys_clone(unsigned long flags, void *stack_top, int (*fn)(void *),
                   void *arg);

/* Gives sig its default action, or ignores it. 0 or -errno. */
long cli_sys_disposition(int sig, int ignore);

#endif
