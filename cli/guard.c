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
 * No window is left at fork: the guardian closes its copy of run's end
 * before anything else, so run's death is seen from then on, whenever it
 * comes; the command is forked only after that, and it checks with
 * getppid(), once it has asked for SIGKILL on the guardian's death, that
 * the guardian is still its parent.
 */
/* vfork() */
#define _DEFAULT_SOURCE 1

#include "guard.h"

#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* The longest single poll() when the deadline is far off. */
#define GUARD_POLL_MAX_MS 3600000
/* How long the command runs before the guardian drops its copies of
 * run's descriptors and of the standard ones (tidy_up): a command that
 * ends sooner spares it that work, a tenth of a millisecond or more
 * that would otherwise be on the path of every short command. */
#define GUARD_TIDY_MS 10

typedef struct guardian {
    const cli_guard_spawn *s;
    pid_t self;
    int fd;    /* the socket to and from run */
    int sfd;   /* a signalfd for SIGCHLD */
    pid_t job; /* the command's pid, also its process group */
    int64_t deadline_ms;
    int status; /* the command's wait status, once reaped */
    int reaped;
    int expired;  /* the deadline passed */
    int orphaned; /* run is gone */
    int tidy;     /* tidy_up() is still to be done */
} guardian;

static int send_msg(int fd, int type, int arg, int64_t val)
{
    cli_guard_msg m;
    ssize_t n;

    memset(&m, 0, sizeof m);
    m.type = type;
    m.arg = arg;
    m.val = val;
    do
        n = send(fd, &m, sizeof m, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof m ? 0 : -1;
}

/* A peer that closes its end with messages of ours still unread resets
 * the socket, and Linux reports that reset before the messages the peer
 * sent first: the guardian's last word (EXITED) would be lost whenever a
 * renewal's DEADLINE reached it after its last read. So a reset is read
 * past once; what follows is the peer's messages, then end of file. */
static int recv_msg(int fd, cli_guard_msg *m)
{
    ssize_t n;
    int reset = 0;

    for (;;) {
        n = recv(fd, m, sizeof *m, 0);
        if (n < 0 && (errno == EINTR || (errno == ECONNRESET && !reset++)))
            continue;
        return n == (ssize_t)sizeof *m;
    }
}

/* In the command's process: its own group (and the terminal, when run
 * had it), death with the guardian, what run changed undone, then exec.
 * A failure's errno goes to *err, in the guardian's memory (vfork). */
static void job_main(const cli_guard_spawn *s, pid_t guardian_pid,
                     volatile int *err)
{
    setpgid(0, 0);
    /* SIGTTOU is blocked, so this works from a background group too. */
    if (s->tty >= 0)
        tcsetpgrp(s->tty, getpid());
    /* A second line behind the guardian, for the command alone: if the
     * guardian dies, so does the command; if it died before this call,
     * the command never starts. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
        *err = errno;
        _exit(127);
    }
    if (getppid() != guardian_pid)
        _exit(127);
    sigaction(SIGPIPE, &s->sigpipe, NULL);
    sigaction(SIGCHLD, &s->sigchld, NULL);
    sigprocmask(SIG_SETMASK, &s->mask, NULL);
    execvp(s->cmd[0], s->cmd);
    *err = errno;
    _exit(127);
}

/*
 * Starts the command. Returns 0, or an errno value.
 *
 * vfork(): the guardian is suspended, its memory shared with the new
 * process, until that process has exec'd or exited. This spares the copy
 * of the guardian's page tables and the copy-on-write faults after it,
 * the larger part of a fork's cost and on every run's path (issue 37).
 * It is safe here because job_main only makes system calls and writes
 * its own locals and errno, and never returns; and no signal handler can
 * run in it on the shared memory, as the guardian has none (run installs
 * none, and what an exec passed on is only defaults and ignores). The
 * guardian acts on nothing while suspended, but nothing of the command
 * runs yet either, and run's death or the deadline are still seen as
 * soon as it resumes.
 */
static int start_job(guardian *gd, int *exec_err)
{
    volatile int err = 0;
    pid_t pid;

    pid = vfork();
    if (pid == 0)
        job_main(gd->s, gd->self, &err);
    if (pid < 0)
        return errno;
    /* The command's group exists: job_main made it before its exec,
     * which vfork() waited for, so a kill of the group from here always
     * reaches the command. Likewise the exec's failure, if any, is
     * known. */
    gd->job = pid;
    *exec_err = err;
    return 0;
}

/* A pid's parent from /proc/PID/stat, or -1. */
static pid_t parent_of(long pid)
{
    char path[64], buf[256];
    const char *p;
    ssize_t n;
    int fd, ppid;

    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return -1;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    /* "pid (comm) state ppid ...": comm may hold ')' and spaces, but
     * nothing after it does. */
    p = strrchr(buf, ')');
    if (p == NULL || sscanf(p + 1, " %*c %d", &ppid) != 1)
        return -1;
    return (pid_t)ppid;
}

/* SIGKILL for every child of the guardian: the orphans of the command's
 * descendants, which a child subreaper adopts, and what is left of the
 * command's group. They are found in /proc, as the kernel need not list
 * a process's children elsewhere (/proc/PID/task/TID/children needs
 * CONFIG_PROC_CHILDREN, and may miss a child while the list changes). */
static void kill_children(pid_t self)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    char *end;
    long pid;

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        pid = strtol(e->d_name, &end, 10);
        if (*end == '\0' && pid > 0 && parent_of(pid) == self)
            kill((pid_t)pid, SIGKILL);
    }
    closedir(d);
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
        kill(-gd->job, SIGKILL);
        r = waitpid(-1, &st, WNOHANG);
        if (r == 0) {
            kill_children(gd->self);
            r = waitpid(-1, &st, 0);
        }
        if (r < 0 && errno == EINTR)
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

    while (read(gd->sfd, &si, sizeof si) > 0)
        ;
    while ((r = waitpid(-1, &st, WNOHANG | WUNTRACED)) > 0) {
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
        kill(m.val ? -gd->job : gd->job, m.arg);
    return 1;
}

/* The command has its own standard input, output and error; the
 * guardian's copies would keep a pipe (as in "$(redislock run ...)")
 * open for as long as it lingers. It lingers only to kill, and exits
 * once the command is gone, so this too waits for the tidy-up. */
static void quiet_std_fds(void)
{
    int fd = open("/dev/null", O_RDWR), i;

    if (fd < 0)
        return;
    for (i = 0; i < 3; i++)
        if (fd != i)
            dup2(fd, i);
    if (fd > 2)
        close(fd);
}

/* Closes what the guardian inherited from run that the command does not
 * get either (close-on-exec: the Redis connections, run's signalfd), so
 * that no copy of them outlives run in here; its own descriptors and the
 * terminal stay. */
static void close_inherited(const guardian *gd)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    char *end;
    long fd;

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        fd = strtol(e->d_name, &end, 10);
        if (*end != '\0' || fd < 3 || fd == gd->fd || fd == gd->sfd ||
            fd == gd->s->tty || fd == dirfd(d))
            continue;
        if ((fcntl((int)fd, F_GETFD) & FD_CLOEXEC) != 0)
            close((int)fd);
    }
    closedir(d);
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

/* Waits until the command ends, run is gone or the deadline passes. A
 * deadline is only acted on once nothing is pending: a newer one that
 * run sent in time wins even if the guardian wakes up late. */
static void watch(guardian *gd)
{
    struct pollfd p[2];
    int64_t now;
    int late, n, ms;

    while (!gd->reaped && !gd->orphaned) {
        now = cli_now_ms();
        late = now >= gd->deadline_ms;
        ms = late ? 0 : poll_ms(gd->deadline_ms - now);
        if (gd->tidy && ms > GUARD_TIDY_MS)
            ms = GUARD_TIDY_MS;
        p[0].fd = gd->fd;
        p[1].fd = gd->sfd;
        p[0].events = p[1].events = POLLIN;
        n = poll(p, 2, ms);
        if (n < 0 && errno == EINTR)
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

/* Out of run's process group, so that a signal for that group (the
 * terminal's, or "kill -- -PGID") does not reach it; a child subreaper,
 * so that the command's orphans come here rather than to init; and the
 * job-control stops and SIGCHLD blocked (the latter is read from sfd).
 * run's forwarded signals are blocked already. Returns 0 or errno. */
static int guardian_setup(guardian *gd)
{
    sigset_t set;

    setpgid(0, 0);
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
        return errno;
    sigemptyset(&set);
    sigaddset(&set, SIGTSTP);
    sigaddset(&set, SIGTTIN);
    sigaddset(&set, SIGTTOU);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    gd->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    return gd->sfd < 0 ? errno : 0;
}

static void guardian_main(const cli_guard_spawn *s, int fd)
{
    guardian gd;
    int err, exec_err = 0;

    memset(&gd, 0, sizeof gd);
    gd.s = s;
    gd.self = getpid();
    gd.fd = fd;
    gd.deadline_ms = s->deadline_ms;
    gd.tidy = 1;
    err = guardian_setup(&gd);
    if (err == 0)
        err = start_job(&gd, &exec_err);
    if (err != 0) {
        (void)send_msg(fd, CLI_GUARD_FAILED, err, 0);
        _exit(0);
    }
    (void)send_msg(fd, CLI_GUARD_STARTED, 0, gd.job);
    if (exec_err != 0)
        (void)send_msg(fd, CLI_GUARD_FAILED, exec_err, 1);
    watch(&gd);
    kill_all(&gd);
    if (!gd.orphaned)
        (void)send_msg(fd, CLI_GUARD_EXITED, gd.status, gd.expired);
    _exit(0);
}

int cli_guard_start(cli_guard *g, const cli_guard_spawn *s)
{
    int sv[2], err;

    g->pid = -1;
    g->fd = -1;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return errno;
    fflush(NULL);
    g->pid = fork();
    if (g->pid == 0) {
        /* First of all: from here on, run's death is an end of file. */
        close(sv[0]);
        guardian_main(s, sv[1]);
    }
    err = errno;
    close(sv[1]);
    if (g->pid < 0) {
        close(sv[0]);
        return err;
    }
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
}
