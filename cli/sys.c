/*
 * System calls without libc's state, for run's guardian (see sys.h).
 */
#define _GNU_SOURCE 1

#include "sys.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

int cli_sys_shared(void)
{
    return CLI_SYS_SHARED && !RUNNING_ON_VALGRIND;
}

#if CLI_SYS_SHARED

#define RL_CLI_STR_(x) #x
#define RL_CLI_STR(x) RL_CLI_STR_(x)

long cli_sys(long nr, long a, long b, long c, long d, long e, long f)
{
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    long r;

    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8),
                       "r"(r9)
                     : "rcx", "r11", "memory");
    return r;
}

/*
 * clone(2) with a new stack, as libc's clone() but setting no errno:
 * fn and arg go on the new stack, the new process takes them off it and
 * calls fn, and exits (the thread alone: exit, not exit_group) with its
 * value. Arguments: rdi flags, rsi stack_top, rdx fn, rcx arg. The
 * kernel's order is flags, stack, parent_tid, child_tid, tls.
 */
long cli_sys_clone_x64(unsigned long flags, void *stack_top, int (*fn)(void *),
                       void *arg);
__asm__(
    ".text\n"
    ".globl cli_sys_clone_x64\n"
    ".hidden cli_sys_clone_x64\n"
    ".type cli_sys_clone_x64, @function\n"
    "cli_sys_clone_x64:\n"
    "    andq $-16, %rsi\n"
    "    subq $16, %rsi\n"
    "    movq %rdx, 0(%rsi)\n"
    "    movq %rcx, 8(%rsi)\n"
    "    xorl %edx, %edx\n"
    "    xorl %r10d, %r10d\n"
    "    xorl %r8d, %r8d\n"
    "    movl $" RL_CLI_STR(SYS_clone) ", %eax\n"
                                       "    syscall\n"
                                       "    testq %rax, %rax\n"
                                       "    jnz 1f\n"
                                       "    xorl %ebp, %ebp\n"
                                       "    popq %rax\n"
                                       "    popq %rdi\n"
                                       "    call *%rax\n"
                                       "    movl %eax, %edi\n"
                                       "    movl $" RL_CLI_STR(
                                           SYS_exit) ", %eax\n"
                                                     "    syscall\n"
                                                     "    hlt\n"
                                                     "1:  ret\n"
                                                     ".size cli_sys_clone_x64, "
                                                     ".-cli_sys_clone_x64\n");

long cli_sys_clone(unsigned long flags, void *stack_top, int (*fn)(void *),
                   void *arg)
{
    return cli_sys_clone_x64(flags, stack_top, fn, arg);
}

long cli_sys_disposition(int sig, int ignore)
{
    /* The kernel's struct sigaction on x86-64; SIG_DFL and SIG_IGN need
     * no restorer. */
    struct {
        void (*handler)(int);
        unsigned long flags;
        void (*restorer)(void);
        unsigned long mask;
    } sa;

    memset(&sa, 0, sizeof sa);
    sa.handler = ignore ? SIG_IGN : SIG_DFL;
    return CLI_SYS4(SYS_rt_sigaction, sig, &sa, 0, CLI_SYS_SIGSET_BYTES);
}

#else /* the guardian is forked: libc's calls are safe */

long cli_sys(long nr, long a, long b, long c, long d, long e, long f)
{
    long r = syscall(nr, a, b, c, d, e, f);

    return r < 0 ? -errno : r;
}

long cli_sys_clone(unsigned long flags, void *stack_top, int (*fn)(void *),
                   void *arg)
{
    long r = clone(fn, stack_top, (int)flags, arg);

    return r < 0 ? -errno : r;
}

long cli_sys_disposition(int sig, int ignore)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = ignore ? SIG_IGN : SIG_DFL;
    sigemptyset(&sa.sa_mask);
    return sigaction(sig, &sa, NULL) == 0 ? 0 : -errno;
}

#endif
