/*
 * redislock run: hold a lock while a command runs.
 *
 * The CLI is one thread. The signals it cares about (SIGCHLD and those it
 * passes on) are blocked from the start and taken synchronously with
 * sigtimedwait(), whose timeout is the time until the next renewal, so
 * renewing, forwarding and reaping never race with signal handlers.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Time between SIGTERM and SIGKILL once the lock is lost. */
#define RUN_GRACE_MS 5000
/* Longest sleep when nothing is due, only as a safety net. */
#define RUN_IDLE_MS 60000

typedef struct run_state {
    const char *ctx;
    char key[CLI_QUOTE_MAX]; /* quoted for messages */
    redislock_lock *l;
    int64_t ttl_ms;
    int64_t renew_every_ms; /* TTL/3 */
    int64_t retry_ms;       /* pause after a failed renewal */
    int64_t op_ms;          /* connect and command timeout */
    int64_t safety_ms;      /* validity left over when giving up */
    int64_t hold_after_ms;  /* --hold-after */
    int64_t next_renew_ms;
    int64_t kill_at_ms; /* SIGKILL then, or -1 */
    pid_t pid;
    int status; /* wait status, once reaped */
    int reaped;
    int lost;         /* the command was told to stop */
    int may_hold;     /* lost by errors: the lease may still be ours */
    sigset_t fwd;     /* signals passed on to the command */
    sigset_t waitset; /* fwd plus SIGCHLD */
    sigset_t orig_mask;
    struct sigaction chld_orig, pipe_orig;
} run_state;

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/*
 * Derives the timing from the TTL. A request may take two timeouts
 * (reconnect, then the command), so the client's timeouts shrink with
 * short TTLs: a renewal must be able to fail and be retried well before
 * the lease ends.
 */
static void set_timing(run_state *st, int64_t ttl_ms)
{
    st->ttl_ms = ttl_ms;
    st->renew_every_ms = clamp(ttl_ms / 3, 1, INT64_MAX);
    st->op_ms = clamp(ttl_ms / 5, 10, REDISLOCK_DEFAULT_COMMAND_TIMEOUT_MS);
    st->retry_ms = clamp(ttl_ms / 10, 10, 1000);
    st->safety_ms = clamp(ttl_ms / 10, 1, INT64_MAX);
    st->kill_at_ms = -1;
}

/* In the child: undo what the CLI changed for itself, then exec. An exec
 * failure is reported to the parent through the close-on-exec pipe. */
static void child_exec(const run_state *st, char **cmd, int fd)
{
    int err;
    ssize_t n;

    sigaction(SIGPIPE, &st->pipe_orig, NULL);
    sigaction(SIGCHLD, &st->chld_orig, NULL);
    sigprocmask(SIG_SETMASK, &st->orig_mask, NULL);
    execvp(cmd[0], cmd);
    err = errno;
    n = write(fd, &err, sizeof err);
    (void)n;
    _exit(127);
}

static int exec_failed(run_state *st, const char *cmd, int err)
{
    char q[CLI_QUOTE_MAX];

    while (waitpid(st->pid, &st->status, 0) < 0 && errno == EINTR)
        ;
    st->reaped = 1;
    cli_err(st->ctx, "cannot run '%s': %s", cli_quote(cmd, q, sizeof q),
            strerror(err));
    /* As in sh(1): 127 for a command not found, 126 otherwise. */
    return err == ENOENT ? 127 : 126;
}

/* Starts the command. Returns 0, or an exit status after a message. */
static int spawn(run_state *st, char **cmd)
{
    int fds[2], err = 0;
    ssize_t n;

    if (pipe(fds) != 0 || fcntl(fds[0], F_SETFD, FD_CLOEXEC) != 0 ||
        fcntl(fds[1], F_SETFD, FD_CLOEXEC) != 0) {
        cli_err(st->ctx, "cannot create a pipe: %s", strerror(errno));
        return CLI_EXIT_SOFTWARE;
    }
    fflush(NULL);
    st->pid = fork();
    if (st->pid == 0)
        child_exec(st, cmd, fds[1]);
    err = errno;
    close(fds[1]);
    if (st->pid < 0) {
        close(fds[0]);
        cli_err(st->ctx, "cannot start a process: %s", strerror(err));
        return CLI_EXIT_SOFTWARE;
    }
    /* EOF means the exec succeeded and closed the pipe. */
    do
        n = read(fds[0], &err, sizeof err);
    while (n < 0 && errno == EINTR);
    close(fds[0]);
    if (n == (ssize_t)sizeof err)
        return exec_failed(st, cmd[0], err);
    return 0;
}

static const char *loss_reason(redislock_err err)
{
    return err == REDISLOCK_ELOST ? "another owner holds it"
                                  : "it expired before it was renewed";
}

/* Stops the command because the lease cannot be kept. */
static void give_up(run_state *st, redislock_err err, int64_t now)
{
    char what[CLI_QUOTE_MAX + 64];

    if (err == REDISLOCK_ELOST || err == REDISLOCK_EEXPIRED) {
        cli_err(st->ctx, "lock '%s' lost: %s; stopping the command", st->key,
                loss_reason(err));
    } else {
        snprintf(what, sizeof what,
                 "cannot renew lock '%s' in time; stopping the command",
                 st->key);
        cli_fail(st->ctx, err, what);
        st->may_hold = 1;
    }
    st->lost = 1;
    kill(st->pid, SIGTERM);
    st->kill_at_ms = now + RUN_GRACE_MS;
}

/* One renewal attempt, when it is due. */
static void renew(run_state *st)
{
    int64_t start = cli_now_ms(), now;
    redislock_err err = redislock_extend(st->l, st->ttl_ms);

    now = cli_now_ms();
    if (err == REDISLOCK_OK) {
        st->next_renew_ms = start + st->renew_every_ms;
        return;
    }
    if (err == REDISLOCK_ELOST || err == REDISLOCK_EEXPIRED) {
        give_up(st, err, now);
        return;
    }
    /*
     * Retry only while one more attempt, taking up to two timeouts, would
     * still end, with a margin, before the lease's validity does. The
     * library counts the validity from when the last request that held
     * the lock was sent, less an allowance for clock drift, so the
     * command is stopped before the server can expire the key.
     */
    st->next_renew_ms = now + st->retry_ms;
    if (st->retry_ms + 2 * st->op_ms + st->safety_ms >
        redislock_valid_ms(st->l))
        give_up(st, err, now);
}

static void reap(run_state *st)
{
    pid_t r = waitpid(st->pid, &st->status, WNOHANG);

    if (r == st->pid || (r < 0 && errno == ECHILD)) {
        if (r < 0)
            st->status = -1;
        st->reaped = 1;
    }
}

/* Passes a signal on to the command. */
static void forward(const run_state *st, int sig, const siginfo_t *si)
{
#ifdef SI_KERNEL
    /* The terminal's signals (Ctrl-C) go to the whole foreground process
     * group; when the command shares ours it already has this one. */
    if (si->si_code == SI_KERNEL && getpgid(st->pid) == getpgrp())
        return;
#else
    (void)si;
#endif
    kill(st->pid, sig);
}

static struct timespec ms_to_timespec(int64_t ms)
{
    struct timespec ts;

    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    return ts;
}

/* Waits for a signal or for the next thing due, and handles the signal. */
static void wait_event(run_state *st, int64_t now)
{
    int64_t at = now + RUN_IDLE_MS;
    struct timespec ts;
    siginfo_t si;
    int sig;

    if (!st->lost && st->next_renew_ms < at)
        at = st->next_renew_ms;
    if (st->kill_at_ms >= 0 && st->kill_at_ms < at)
        at = st->kill_at_ms;
    ts = ms_to_timespec(at > now ? at - now : 0);
    memset(&si, 0, sizeof si);
    sig = sigtimedwait(&st->waitset, &si, &ts);
    if (sig > 0 && sig != SIGCHLD)
        forward(st, sig, &si);
}

/* Runs until the command has ended, renewing the lease. */
static void supervise(run_state *st)
{
    int64_t now;

    for (;;) {
        reap(st);
        if (st->reaped)
            return;
        now = cli_now_ms();
        if (st->kill_at_ms >= 0 && now >= st->kill_at_ms) {
            kill(st->pid, SIGKILL);
            st->kill_at_ms = -1;
        }
        if (!st->lost && now >= st->next_renew_ms) {
            renew(st);
            continue;
        }
        wait_event(st, now);
    }
}

static int child_rc(int status)
{
    if (status == -1)
        return CLI_EXIT_SOFTWARE;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return CLI_EXIT_SOFTWARE;
}

/* Releases the lock after the command ended and picks the exit status. */
static int finish(run_state *st)
{
    char what[CLI_QUOTE_MAX + 64];
    redislock_err err;

    if (st->status == -1)
        cli_err(st->ctx, "lost track of the command's process");
    if (st->lost) {
        /* Best effort: after errors the lease may still be ours. */
        if (st->may_hold)
            (void)redislock_release(st->l);
        return CLI_EXIT_LOST;
    }
    err = redislock_release_hold(st->l, st->hold_after_ms);
    if (err == REDISLOCK_ELOST || err == REDISLOCK_EEXPIRED) {
        cli_err(st->ctx, "lock '%s' lost before the command ended: %s", st->key,
                loss_reason(err));
        return CLI_EXIT_LOST;
    }
    if (err != REDISLOCK_OK) {
        /* The command did run under the lock; it expires by its TTL. */
        snprintf(what, sizeof what, "cannot release lock '%s'", st->key);
        cli_fail(st->ctx, err, what);
    }
    return child_rc(st->status);
}

/* Blocks the signals taken by sigtimedwait() before anything can happen
 * that they should affect; the command gets the original mask back. */
static void block_signals(run_state *st, const cli_global *g)
{
    struct sigaction dfl;

    st->pipe_orig = g->sigpipe_orig;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    /* With SIGCHLD ignored on entry the kernel would reap the command
     * itself and its status would be lost. */
    sigaction(SIGCHLD, &dfl, &st->chld_orig);
    cli_signal_set(&st->fwd);
    st->waitset = st->fwd;
    sigaddset(&st->waitset, SIGCHLD);
    sigprocmask(SIG_BLOCK, &st->waitset, &st->orig_mask);
}

static int hold_and_run(run_state *st, const cli_cmdopts *o, const char *key,
                        char **cmd)
{
    char fence[24];
    int rc;

    if (!cli_take(st->ctx, st->l, &o->acq, &st->fwd, o->conflict_code, &rc))
        return rc;
    st->next_renew_ms = cli_now_ms() + st->renew_every_ms;
    /* Set here rather than in the child, where only async-signal-safe
     * calls belong. */
    snprintf(fence, sizeof fence, "%lld", (long long)redislock_fence(st->l));
    if (setenv("REDISLOCK_KEY", key, 1) != 0 ||
        setenv("REDISLOCK_TOKEN", redislock_token(st->l), 1) != 0 ||
        setenv("REDISLOCK_FENCE", fence, 1) != 0) {
        cli_err(st->ctx, "cannot set the environment: %s", strerror(errno));
        rc = CLI_EXIT_SOFTWARE;
    } else {
        rc = spawn(st, cmd);
    }
    if (rc != 0) {
        (void)redislock_release(st->l);
        return rc;
    }
    supervise(st);
    return finish(st);
}

int cli_cmd_run(int argc, char **argv, const cli_global *g)
{
    static const cli_optdef defs[] = {
        CLI_OPTS_COMMON,
        CLI_OPTS_TAKE,
        {CLI_ID_HOLD_AFTER, "hold-after", 1},
        {0, NULL, 0},
    };
    static const char *const names[] = {"KEY", "COMMAND"};
    redislock_client *c;
    cli_cmdopts o;
    run_state st;
    const char *key;
    int rc, cmd;

    rc = cli_cmd_options(argc, argv, g, defs, 1, -1, names, &o);
    if (rc != CLI_CONTINUE)
        return rc;
    key = argv[o.operand];
    cmd = o.operand + 1;
    if (cmd < argc && strcmp(argv[cmd], "--") == 0)
        cmd++;
    if (cmd >= argc)
        return cli_usage(argv[0], "missing COMMAND after KEY");
    if ((rc = cli_check_key(argv[0], key)) != 0)
        return rc;
    memset(&st, 0, sizeof st);
    st.ctx = argv[0];
    cli_quote(key, st.key, sizeof st.key);
    set_timing(&st, o.acq.ttl_ms);
    st.hold_after_ms = o.hold_after_ms;
    rc = cli_open(st.ctx, &o.g, key, st.op_ms, &c, &st.l);
    if (rc != 0)
        return rc;
    /* The client has its copy of any password from the environment. */
    cli_scrub_env(&o.g);
    block_signals(&st, g);
    rc = hold_and_run(&st, &o, key, argv + cmd);
    cli_close(c, st.l);
    return rc;
}
