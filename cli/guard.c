/*
 * The guardian of run's command (see guard.h).
 *
 * Why a process of its own: PR_SET_PDEATHSIG reaches only a direct child,
 * not what that child starts, and a stopped or stuck run cannot act when
 * its lease ends. The guardian holds one end of a socket pair whose other
 * end only run holds (both close-on-exec, so the command inherits
 * neither): end of file there means that run is gone, whatever killed it.
 * It polls that socket with a timeout at the validity end that run sent
 * last. On end of file, or when that time comes without a newer one, it
 * sends SIGKILL to the command's process group and, being a child
 * subreaper, to the processes that left the group and were re-parented
 * to it. When the command ends by itself, what it left running is killed
 * the same way, before run releases the lock.
 *
 * No window is left at the clone: the guardian closes its copy of run's
 * end before anything else, so run's death is seen from then on, whenever
 * it comes; the command is started only after that, and it checks with
 * getppid(), once it has asked for SIGKILL on the guardian's death, that
 * the guardian is still its parent.
 *
 * On x86-64 the guardian shares run's memory (sys.h says why), so from
 * its first instruction it uses only what run copied for it into a
 * mapping of its own (its state with copies of the command's and the
 * environment's arrays, and two stacks: its own and the command's until
 * its exec), the strings of run's arguments and environment, which run
 * never frees, and system calls from sys.h. Of libc it calls only string
 * and signal-set functions on its own memory, which keep no state and
 * set no errno; run's side (cli_guard_*) may call anything.
 */
/* clone flags, MAP_STACK */
#define _GNU_SOURCE 1

#include "guard.h"

#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

/* The longest single poll() when the deadline is far off. */
#define GUARD_POLL_MAX_MS 3600000
/* How long the command runs before the guardian drops its copies of
 * run's descriptors and of the standard ones (tidy_up): a command that
 * ends sooner spares it that work, a tenth of a millisecond or more
 * that would otherwise be on the path of every short command. */
#define GUARD_TIDY_MS 10
/* The stacks: the guardian's, and the command's until its exec (a path
 * being tried, and the few calls before it). Pages are only taken as
 * they are touched. */
#define GUARD_STACK (64 * 1024)
#define JOB_STACK (64 * 1024)
/* What the guardian reads of a directory at a time. */
#define GUARD_DIRBUF 4096
/* The search path when PATH is not set, as execvp's. */
#define GUARD_DEFAULT_PATH "/bin:/usr/bin"

/* The guardian's state, in its own mapping (see the top of the file). */
typedef struct guardian {
    /* Copied by run before the clone; the arrays follow this struct. */
    char **cmd;
    char **envp;
    char **sh_argv; /* "/bin/sh", room for the file, cmd[1..], NULL */
    const char *path;
    sigset_t mask;
    int pipe_ignored, chld_ignored;
    int tty;
    int fd;     /* the socket to and from run */
    int run_fd; /* run's end, which the guardian closes first */
    /* The guardian's own. */
    pid_t self;
    int sfd;   /* a signalfd for SIGCHLD */
    pid_t job; /* the command's pid, also its process group */
    int64_t deadline_ms;
    int exec_err; /* set by the command's process before it exits */
    int status;   /* the command's wait status, once reaped */
    int reaped;
    int expired;  /* the deadline passed */
    int orphaned; /* run is gone */
    int tidy;     /* tidy_up() is still to be done */
    char *job_stack_top;
} guardian;

static int64_t now_ms(void)
{
    struct timespec ts;

    if (CLI_SYS2(SYS_clock_gettime, CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int send_msg(int fd, int type, int arg, int64_t val)
{
    cli_guard_msg m;
    long n;

    memset(&m, 0, sizeof m);
    m.type = type;
    m.arg = arg;
    m.val = val;
    do
        n = CLI_SYS6(SYS_sendto, fd, &m, sizeof m, MSG_NOSIGNAL, 0, 0);
    while (n == -EINTR);
    return n == (long)sizeof m ? 0 : -1;
}

/* A peer that closes its end with messages of ours still unread resets
 * the socket, and Linux reports that reset before the messages the peer
 * sent first: the guardian's last word (EXITED) would be lost whenever a
 * renewal's DEADLINE reached it after its last read. So a reset is read
 * past once; what follows is the peer's messages, then end of file. */
static int recv_msg(int fd, cli_guard_msg *m)
{
    long n;
    int reset = 0;

    for (;;) {
        n = CLI_SYS6(SYS_recvfrom, fd, m, sizeof *m, 0, 0, 0);
        if (n == -EINTR || (n == -ECONNRESET && !reset++))
            continue;
        return n == (long)sizeof *m;
    }
}

static void sys_close(int fd)
{
    (void)CLI_SYS1(SYS_close, fd);
}

static void sys_kill(pid_t pid, int sig)
{
    (void)CLI_SYS2(SYS_kill, pid, sig);
}

static pid_t sys_wait(pid_t pid, int *st, int options)
{
    return (pid_t)CLI_SYS4(SYS_wait4, pid, st, options, 0);
}

static int sys_open(const char *path, int flags)
{
    return (int)CLI_SYS4(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC, 0);
}

/* Calls each(ctx, name) for each entry of the directory open at fd, until
 * it returns nonzero. */
static void each_entry(int fd, int (*each)(void *, const char *), void *ctx)
{
    char buf[GUARD_DIRBUF];
    long n, off;
    unsigned short reclen;

    while ((n = CLI_SYS3(SYS_getdents64, fd, buf, sizeof buf)) > 0)
        for (off = 0; off < n; off += reclen) {
            /* struct linux_dirent64: ino (8), off (8), reclen (2),
             * type (1), then the name. */
            memcpy(&reclen, buf + off + 16, sizeof reclen);
            if (reclen == 0 || each(ctx, buf + off + 19))
                return;
        }
}

/* A non-negative decimal number that is all of s, or -1. */
static long number(const char *s)
{
    long v = 0;

    if (*s == '\0')
        return -1;
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9' || v > (LONG_MAX - 9) / 10)
            return -1;
        v = v * 10 + (*s - '0');
    }
    return v;
}

/* "/proc/PID/stat" into buf, which has room for any pid. */
static void stat_path(char *buf, long pid)
{
    char digits[24];
    int n = 0;

    do
        digits[n++] = (char)('0' + pid % 10);
    while ((pid /= 10) > 0);
    memcpy(buf, "/proc/", 6);
    buf += 6;
    while (n > 0)
        *buf++ = digits[--n];
    memcpy(buf, "/stat", 6);
}

/* A pid's parent from /proc/PID/stat, or -1. */
static long parent_of(long pid)
{
    char path[40], buf[256], *p, *q;
    long n;
    int fd;

    stat_path(path, pid);
    if ((fd = sys_open(path, O_RDONLY)) < 0)
        return -1;
    n = CLI_SYS3(SYS_read, fd, buf, sizeof buf - 1);
    sys_close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    /* "pid (comm) state ppid ...": comm may hold ')' and spaces, but
     * nothing after it does. */
    if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ' || p[2] == '\0' ||
        p[3] != ' ')
        return -1;
    p += 4;
    if ((q = strchr(p, ' ')) == NULL)
        return -1;
    *q = '\0';
    return number(p);
}

static int kill_if_child(void *ctx, const char *name)
{
    const guardian *gd = ctx;
    long pid = number(name);

    if (pid > 0 && parent_of(pid) == gd->self)
        sys_kill((pid_t)pid, SIGKILL);
    return 0;
}

/* SIGKILL for every child of the guardian: the orphans of the command's
 * descendants, which a child subreaper adopts, and what is left of the
 * command's group. They are found in /proc, as the kernel need not list
 * a process's children elsewhere (/proc/PID/task/TID/children needs
 * CONFIG_PROC_CHILDREN, and may miss a child while the list changes). */
static void kill_children(guardian *gd)
{
    int fd = sys_open("/proc", O_RDONLY | O_DIRECTORY);

    if (fd < 0)
        return;
    each_entry(fd, kill_if_child, gd);
    sys_close(fd);
}

/*
 * Kills and reaps what is left of the command: its process group, and
 * each process re-parented here. Killing a process re-parents its own
 * children here before its exit is reported, so one more round after
 * each exit finds them; the loop ends when no child is left.
 *
 * The search of /proc, which reads every process's stat on the machine,
 * is only made while a child is alive after the group's kill: with no
 * child at all (ECHILD) the guardian has no descendant either, as an
 * orphan is only ever re-parented to an ancestor. A command that ends
 * and leaves nothing behind, the common case, costs one kill and one
 * wait.
 */
static void kill_all(guardian *gd)
{
    pid_t r;
    int st;

    for (;;) {
        sys_kill(-gd->job, SIGKILL);
        r = sys_wait(-1, &st, WNOHANG);
        if (r == 0) {
            kill_children(gd);
            r = sys_wait(-1, &st, 0);
        }
        if (r == -EINTR)
            continue;
        if (r < 0)
            return;
        if (r == gd->job && !gd->reaped) {
            gd->status = st;
            gd->reaped = 1;
        }
    }
}

/* Reaps what has ended: the command (or reports its stop), and orphans
 * that were re-parented here and exited by themselves. */
static void reap(guardian *gd)
{
    struct signalfd_siginfo si;
    pid_t r;
    int st;

    while (CLI_SYS3(SYS_read, gd->sfd, &si, sizeof si) > 0)
        ;
    while ((r = sys_wait(-1, &st, WNOHANG | WUNTRACED)) > 0) {
        if (r != gd->job || gd->reaped)
            continue;
        if (WIFSTOPPED(st)) {
            (void)send_msg(gd->fd, CLI_GUARD_STOPPED, WSTOPSIG(st), 0);
            continue;
        }
        gd->status = st;
        gd->reaped = 1;
    }
}

/* One message from run; 0 when run is gone. */
static int from_run(guardian *gd)
{
    cli_guard_msg m;

    if (!recv_msg(gd->fd, &m))
        return 0;
    if (m.type == CLI_GUARD_DEADLINE)
        gd->deadline_ms = m.val;
    else if (m.type == CLI_GUARD_SIGNAL && !gd->reaped)
        sys_kill(m.val ? -gd->job : gd->job, m.arg);
    return 1;
}

/* The command has its own standard input, output and error; the
 * guardian's copies would keep a pipe (as in "$(redislock run ...)")
 * open for as long as it lingers. It lingers only to kill, and exits
 * once the command is gone, so this too waits for the tidy-up. */
static void quiet_std_fds(void)
{
    int fd = sys_open("/dev/null", O_RDWR), i;

    if (fd < 0)
        return;
    for (i = 0; i < 3; i++)
        if (fd != i)
            (void)CLI_SYS3(SYS_dup3, fd, i, 0);
    if (fd > 2)
        sys_close(fd);
}

typedef struct fd_scan {
    const guardian *gd;
    int dir;
} fd_scan;

static int close_if_inherited(void *ctx, const char *name)
{
    const fd_scan *fs = ctx;
    long fd = number(name);

    if (fd < 3 || fd > INT_MAX || fd == fs->gd->fd || fd == fs->gd->sfd ||
        fd == fs->gd->tty || fd == fs->dir)
        return 0;
    if ((CLI_SYS2(SYS_fcntl, fd, F_GETFD) & FD_CLOEXEC) != 0)
        sys_close((int)fd);
    return 0;
}

/* Closes what the guardian inherited from run that the command does not
 * get either (close-on-exec: the Redis connections, run's signalfd), so
 * that no copy of them outlives run in here; its own descriptors and the
 * terminal stay. */
static void close_inherited(const guardian *gd)
{
    fd_scan fs;

    fs.gd = gd;
    if ((fs.dir = sys_open("/proc/self/fd", O_RDONLY | O_DIRECTORY)) < 0)
        return;
    each_entry(fs.dir, close_if_inherited, &fs);
    sys_close(fs.dir);
}

/* Drops what the guardian holds of run's and the caller's, once the
 * command has run for GUARD_TIDY_MS. Until then the copies do no harm:
 * run holds the same, and once run is gone the guardian only kills and
 * exits. */
static void tidy_up(guardian *gd)
{
    gd->tidy = 0;
    quiet_std_fds();
    close_inherited(gd);
}

static int poll_ms(int64_t ms)
{
    return ms > GUARD_POLL_MAX_MS ? GUARD_POLL_MAX_MS : (int)ms;
}

static long sys_poll(struct pollfd *p, int n, int ms)
{
    struct timespec ts;

    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (long)(ms % 1000) * 1000000;
    return CLI_SYS4(SYS_ppoll, p, n, &ts, 0);
}

/* Waits until the command ends, run is gone or the deadline passes. A
 * deadline is only acted on once nothing is pending: a newer one that
 * run sent in time wins even if the guardian wakes up late. */
static void watch(guardian *gd)
{
    struct pollfd p[2];
    int64_t now;
    int late, ms;
    long n;

    while (!gd->reaped && !gd->orphaned) {
        now = now_ms();
        late = now >= gd->deadline_ms;
        ms = late ? 0 : poll_ms(gd->deadline_ms - now);
        if (gd->tidy && ms > GUARD_TIDY_MS)
            ms = GUARD_TIDY_MS;
        p[0].fd = gd->fd;
        p[1].fd = gd->sfd;
        p[0].events = p[1].events = POLLIN;
        p[0].revents = p[1].revents = 0;
        n = sys_poll(p, 2, ms);
        if (n == -EINTR)
            continue;
        if (n < 0 || (n == 0 && late) ||
            ((p[0].revents | p[1].revents) & POLLNVAL)) {
            /* A failed poll leaves the guardian blind: end it now. */
            gd->expired = 1;
            return;
        }
        if (n == 0 && gd->tidy)
            tidy_up(gd);
        if (p[1].revents != 0)
            reap(gd);
        if (p[0].revents != 0 && !from_run(gd))
            gd->orphaned = 1;
    }
}

/* execve() with execvp()'s fallback: a file the kernel cannot run is
 * taken as a shell script. Returns only on failure, with -errno. */
static long exec_file(const guardian *gd, const char *file)
{
    long r = CLI_SYS3(SYS_execve, file, gd->cmd, gd->envp);

    if (r == -ENOEXEC) {
        gd->sh_argv[1] = (char *)file;
        (void)CLI_SYS3(SYS_execve, gd->sh_argv[0], gd->sh_argv, gd->envp);
    }
    return r;
}

/* The command found as execvp() finds it: a name with a slash as it is,
 * else each directory of PATH in turn (an empty one is the current
 * directory), past those where it is missing or not permitted. Returns
 * only on failure, with the errno execvp() would give. */
static long exec_search(const guardian *gd)
{
    const char *file = gd->cmd[0], *dir = gd->path, *end;
    char buf[PATH_MAX];
    size_t flen = strlen(file), dlen;
    long r;
    int denied = 0;

    if (*file == '\0')
        return -ENOENT;
    if (strchr(file, '/') != NULL)
        return exec_file(gd, file);
    if (flen >= NAME_MAX + 1)
        return -ENAMETOOLONG;
    for (;; dir = end + 1) {
        end = strchr(dir, ':');
        if (end == NULL)
            end = dir + strlen(dir);
        dlen = (size_t)(end - dir);
        if (dlen + flen + 2 <= sizeof buf) {
            memcpy(buf, dir, dlen);
            if (dlen > 0)
                buf[dlen++] = '/';
            memcpy(buf + dlen, file, flen + 1);
            r = exec_file(gd, buf);
            if (r == -EACCES)
                denied = 1;
            else if (r != -ENOENT && r != -ENOTDIR && r != -ESTALE &&
                     r != -ENODEV && r != -ETIMEDOUT)
                return r;
        }
        if (*end == '\0')
            return denied ? -EACCES : -ENOENT;
    }
}

/* The command's process: its own group (and the terminal, when run had
 * it), death with the guardian, what run changed undone, then exec. It
 * runs on its own stack in the guardian's memory, which the guardian
 * leaves alone until the exec or the exit (CLONE_VFORK); a failure's
 * errno goes to exec_err. */
static int job_main(void *arg)
{
    guardian *gd = arg;
    long err;
    pid_t pid = (pid_t)CLI_SYS1(SYS_getpid, 0);

    (void)CLI_SYS2(SYS_setpgid, 0, 0);
    /* SIGTTOU is blocked, so this works from a background group too. */
    if (gd->tty >= 0)
        (void)CLI_SYS3(SYS_ioctl, gd->tty, TIOCSPGRP, &pid);
    /* A second line behind the guardian, for the command alone: if the
     * guardian dies, so does the command; if it died before this call,
     * the command never starts. */
    err = CLI_SYS2(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);
    if (err == 0 && CLI_SYS1(SYS_getppid, 0) != gd->self)
        return 127;
    if (err == 0) {
        (void)cli_sys_disposition(SIGPIPE, gd->pipe_ignored);
        (void)cli_sys_disposition(SIGCHLD, gd->chld_ignored);
        (void)CLI_SYS4(SYS_rt_sigprocmask, SIG_SETMASK, &gd->mask, 0,
                       CLI_SYS_SIGSET_BYTES);
        err = exec_search(gd);
    }
    gd->exec_err = (int)-err;
    return 127;
}

/*
 * Starts the command. Returns 0, or an errno value.
 *
 * As vfork(): the guardian is suspended, its memory shared with the new
 * process, until that process has exec'd or exited. This spares the copy
 * of page tables and the copy-on-write faults after it. It is safe here
 * because job_main only makes system calls and writes its own stack and
 * exec_err; and no signal handler can run in it on the shared memory, as
 * the guardian has none (run installs none, and what an exec passed on
 * is only defaults and ignores). The guardian acts on nothing while
 * suspended, but nothing of the command runs yet either, and run's death
 * or the deadline are still seen as soon as it resumes.
 */
static int start_job(guardian *gd)
{
    long pid = cli_sys_clone(CLONE_VM | CLONE_VFORK | SIGCHLD,
                             gd->job_stack_top, job_main, gd);

    if (pid < 0)
        return (int)-pid;
    /* The command's group exists: job_main made it before its exec,
     * which the clone waited for, so a kill of the group from here always
     * reaches the command. Likewise the exec's failure, if any, is
     * known. */
    gd->job = (pid_t)pid;
    return 0;
}

/* Out of run's process group, so that a signal for that group (the
 * terminal's, or "kill -- -PGID") does not reach it; a child subreaper,
 * so that the command's orphans come here rather than to init; and the
 * job-control stops and SIGCHLD blocked (the latter is read from sfd).
 * run's forwarded signals are blocked already. Returns 0 or errno. */
static int guardian_setup(guardian *gd)
{
    sigset_t set;
    long r;

    (void)CLI_SYS2(SYS_setpgid, 0, 0);
    if ((r = CLI_SYS2(SYS_prctl, PR_SET_CHILD_SUBREAPER, 1)) != 0)
        return (int)-r;
    sigemptyset(&set);
    sigaddset(&set, SIGTSTP);
    sigaddset(&set, SIGTTIN);
    sigaddset(&set, SIGTTOU);
    sigaddset(&set, SIGCHLD);
    if ((r = CLI_SYS4(SYS_rt_sigprocmask, SIG_BLOCK, &set, 0,
                      CLI_SYS_SIGSET_BYTES)) != 0)
        return (int)-r;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    r = CLI_SYS4(SYS_signalfd4, -1, &set, CLI_SYS_SIGSET_BYTES,
                 SFD_CLOEXEC | SFD_NONBLOCK);
    if (r < 0)
        return (int)-r;
    gd->sfd = (int)r;
    return 0;
}

static int guardian_main(void *arg)
{
    guardian *gd = arg;
    int err;

    /* First of all: from here on, run's death is an end of file. */
    sys_close(gd->run_fd);
    gd->self = (pid_t)CLI_SYS1(SYS_getpid, 0);
    err = guardian_setup(gd);
    if (err == 0)
        err = start_job(gd);
    if (err != 0) {
        (void)send_msg(gd->fd, CLI_GUARD_FAILED, err, 0);
        return 0;
    }
    (void)send_msg(gd->fd, CLI_GUARD_STARTED, 0, gd->job);
    if (gd->exec_err != 0)
        (void)send_msg(gd->fd, CLI_GUARD_FAILED, gd->exec_err, 1);
    watch(gd);
    kill_all(gd);
    if (!gd->orphaned)
        (void)send_msg(gd->fd, CLI_GUARD_EXITED, gd->status, gd->expired);
    return 0;
}

/* The guardian's mapping: its state and the sh_argv array, then a gap,
 * the command's stack, a gap and the guardian's stack. The gaps are not
 * accessible: a stack that overflows faults rather than writing over
 * what lies below it. */
typedef struct guard_map {
    char *base;
    size_t len, head; /* head: the state and sh_argv, page-rounded */
} guard_map;

static size_t page_round(size_t n, size_t page)
{
    return (n + page - 1) / page * page;
}

static int map_guardian(guard_map *m, size_t nptr)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);

    m->head = page_round(sizeof(guardian) + nptr * sizeof(char *), page);
    m->len = m->head + page + JOB_STACK + page + GUARD_STACK;
    m->base = mmap(NULL, m->len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (m->base == MAP_FAILED)
        return errno;
    if (mprotect(m->base + m->head, page, PROT_NONE) != 0 ||
        mprotect(m->base + m->head + page + JOB_STACK, page, PROT_NONE) != 0) {
        int err = errno;

        munmap(m->base, m->len);
        return err;
    }
    return 0;
}

static size_t count(char *const *v)
{
    size_t n = 0;

    while (v[n] != NULL)
        n++;
    return n;
}

/* A copy of v's n pointers and its NULL at *at, which moves past it. */
static char **copy_ptrs(char ***at, char *const *v, size_t n)
{
    char **c = *at;

    memcpy(c, v, n * sizeof *c);
    c[n] = NULL;
    *at = c + n + 1;
    return c;
}

/* What the guardian needs, copied into its mapping: it reads nothing of
 * run's that run may change or free. */
static guardian *fill(const guard_map *m, const cli_guard_spawn *s, size_t argc,
                      size_t envc, const int sv[2])
{
    extern char **environ;
    guardian *gd = (guardian *)(void *)m->base;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char **at = (char **)(void *)(gd + 1);
    const char *path = getenv("PATH");

    memset(gd, 0, sizeof *gd);
    gd->cmd = copy_ptrs(&at, s->cmd, argc);
    gd->envp = copy_ptrs(&at, environ, envc);
    /* "/bin/sh FILE ARG..." for a file the kernel cannot run. */
    at[0] = (char *)"/bin/sh";
    at[1] = NULL;
    gd->sh_argv = at;
    at += 2;
    (void)copy_ptrs(&at, s->cmd + 1, argc - 1);
    gd->path = path != NULL ? path : GUARD_DEFAULT_PATH;
    gd->mask = s->mask;
    gd->pipe_ignored = s->sigpipe.sa_handler == SIG_IGN;
    gd->chld_ignored = s->sigchld.sa_handler == SIG_IGN;
    gd->tty = s->tty;
    gd->fd = sv[1];
    gd->run_fd = sv[0];
    gd->deadline_ms = s->deadline_ms;
    gd->tidy = 1;
    gd->sfd = -1;
    gd->job_stack_top = m->base + m->head + page + JOB_STACK;
    return gd;
}

int cli_guard_start(cli_guard *g, const cli_guard_spawn *s)
{
    guard_map m;
    guardian *gd;
    extern char **environ;
    size_t argc = count(s->cmd), envc = count(environ);
    int sv[2], err;
    long pid;

    g->pid = -1;
    g->fd = -1;
    g->map = NULL;
    if (argc == 0)
        return EINVAL;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return errno;
    /* The three arrays: argc + 1, envc + 1 and argc + 2 pointers. */
    if ((err = map_guardian(&m, 2 * argc + envc + 4)) != 0) {
        close(sv[0]);
        close(sv[1]);
        return err;
    }
    gd = fill(&m, s, argc, envc, sv);
    fflush(NULL);
    pid = cli_sys_clone((cli_sys_shared() ? CLONE_VM : 0) | SIGCHLD,
                        m.base + m.len, guardian_main, gd);
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        munmap(m.base, m.len);
        return (int)-pid;
    }
    g->pid = (pid_t)pid;
    g->map = m.base;
    g->map_len = m.len;
    setpgid(g->pid, g->pid);
    g->fd = sv[0];
    return 0;
}

int cli_guard_send(const cli_guard *g, int type, int arg, int64_t val)
{
    return g->fd >= 0 ? send_msg(g->fd, type, arg, val) : -1;
}

int cli_guard_recv(const cli_guard *g, cli_guard_msg *m)
{
    return g->fd >= 0 && recv_msg(g->fd, m);
}

void cli_guard_end(cli_guard *g)
{
    int st;

    if (g->fd >= 0)
        close(g->fd);
    g->fd = -1;
    if (g->pid > 0)
        while (waitpid(g->pid, &st, 0) < 0 && errno == EINTR)
            ;
    g->pid = -1;
    /* Only once the guardian is gone: it runs on this memory. */
    if (g->map != NULL)
        munmap(g->map, g->map_len);
    g->map = NULL;
}
