/*
 * redislock run: hold a lock while a command runs; redislock elect: lead
 * an election while it runs (the lock taken by a campaign, given up by a
 * resignation).
 *
 * The command runs under a guardian (guard.c) that kills it, with all
 * it started, when run dies or the lease's known validity ends; run
 * sends it each new validity end, its own renewals' and the library's
 * (the watchdog renews a fair hand-off's short lease), and passes
 * signals on through it. run's own work is on one thread: the signals it
 * passes on are blocked and read from a signalfd, polled with the
 * guardian's socket, a pipe the library's renewals write to, and a
 * timeout at the next renewal, so renewing, forwarding and the command's
 * end never race with signal handlers.
 */
#include "cli.h"
#include "guard.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* Time between SIGTERM and SIGKILL once the lock is lost, unless the
 * lease's validity ends sooner. */
#define RUN_GRACE_MS 5000
/* Longest sleep when nothing is due, only as a safety net. */
#define RUN_IDLE_MS 60000

typedef struct run_state {
    const char *ctx;
    char key[CLI_QUOTE_MAX]; /* quoted for messages */
    const char *cmd;         /* the command's name, for messages */
    redislock_lock *l;
    int64_t ttl_ms;
    int64_t renew_every_ms; /* TTL/3 */
    int64_t retry_ms;       /* pause after a failed renewal */
    int64_t op_ms;          /* the longer of the connect and command timeouts */
    int64_t op_cap_ms;      /* the most either may be: TTL/5 */
    int64_t safety_ms;      /* validity left over when giving up */
    int64_t margin_ms;      /* the guardian's head start, TTL/20 */
    int64_t hold_after_ms;  /* --hold-after */
    int64_t next_renew_ms;
    int64_t kill_by_ms; /* the command must be dead by then */
    cli_guard guard;
    pid_t job;      /* the command's pid and process group, once known */
    int sfd;        /* signalfd for the signals passed on */
    int renewed[2]; /* a pipe: a byte at each renewal (cli_on_event) */
    int tty;        /* the controlling terminal, or -1 */
    int handed;     /* the command's group was given the terminal */
    int status;     /* the command's wait status; -1: lost track */
    int ended;      /* the guardian has reported the end */
    int start_err;  /* errno of a failed exec or fork */
    int exec_failed;
    int expired;        /* the guardian killed the command at the deadline */
    int lost;           /* the command was told to stop */
    int may_hold;       /* lost by errors: the lease may still be ours */
    int verbose;        /* --verbose */
    int elect;          /* elect: resign rather than release */
    int64_t started_ms; /* when the command was started */
    sigset_t fwd;       /* signals passed on to the command */
    sigset_t orig_mask;
    struct sigaction chld_orig, pipe_orig;
} run_state;

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/*
 * Derives the timing from the TTL. A request may take two timeouts
 * (reconnect, then the command), so the client's timeouts, whoever set
 * them, shrink with short TTLs: a renewal must be able to fail and be
 * retried well before the lease ends.
 */
static void set_timing(run_state *st, int64_t ttl_ms)
{
    st->ttl_ms = ttl_ms;
    st->renew_every_ms = clamp(ttl_ms / 3, 1, INT64_MAX);
    st->op_cap_ms = clamp(ttl_ms / 5, 10, INT64_MAX);
    st->retry_ms = clamp(ttl_ms / 10, 10, 1000);
    st->safety_ms = clamp(ttl_ms / 10, 1, INT64_MAX);
    st->margin_ms = clamp(ttl_ms / 20, 0, 250);
}

/*
 * Notes when the command must be dead: at the lease's known validity end,
 * less a margin for the guardian's own latency (it must be scheduled to
 * act, which takes longer on a loaded machine), so that the SIGKILL lands
 * before the end rather than just after it.
 */
static void set_kill_by(run_state *st, int64_t now)
{
    st->kill_by_ms = now + redislock_valid_ms(st->l) - st->margin_ms;
}

/* Starts the guardian, and through it the command, whose process group
 * gets the terminal when run is in the foreground of one, as a shell's
 * job would. Returns 0, or an exit status after a message. */
static int spawn(run_state *st, char **cmd)
{
    cli_guard_spawn s;
    int err;

    memset(&s, 0, sizeof s);
    s.cmd = cmd;
    s.deadline_ms = st->kill_by_ms;
    s.mask = st->orig_mask;
    s.sigpipe = st->pipe_orig;
    s.sigchld = st->chld_orig;
    s.tty = st->tty >= 0 && tcgetpgrp(st->tty) == getpgrp() ? st->tty : -1;
    st->handed = s.tty >= 0;
    st->cmd = cmd[0];
    err = cli_guard_start(&st->guard, &s);
    if (err != 0) {
        cli_err(st->ctx, "cannot start a process: %s", strerror(err));
        return CLI_EXIT_SOFTWARE;
    }
    return 0;
}

static const char *loss_reason(redislock_err err)
{
    return err == REDISLOCK_ELOST ? "another owner holds it"
                                  : "it expired before it was renewed";
}

/* Stops the command because the lease cannot be kept: SIGTERM for its
 * process group, and SIGKILL from the guardian after the grace period or
 * at the lease's validity end, whichever comes first. */
static void give_up(run_state *st, redislock_err err, int64_t now)
{
    char what[CLI_QUOTE_MAX + 64];
    int64_t kill_at = now + RUN_GRACE_MS;

    if (err == REDISLOCK_ELOST || err == REDISLOCK_EEXPIRED) {
        cli_err(st->ctx, "lock '%s' lost: %s; stopping the command", st->key,
                loss_reason(err));
    } else if (err == REDISLOCK_EREVOKED) {
        /* Still ours: released once the command has ended. */
        cli_err(st->ctx, "lock '%s' revoked: %s; stopping the command", st->key,
                redislock_errdetail());
        st->may_hold = 1;
    } else {
        snprintf(what, sizeof what,
                 "cannot renew lock '%s' in time; stopping the command",
                 st->key);
        cli_fail(st->ctx, err, what);
        st->may_hold = 1;
    }
    st->lost = 1;
    if (kill_at > st->kill_by_ms)
        kill_at = st->kill_by_ms;
    (void)cli_guard_send(&st->guard, CLI_GUARD_SIGNAL, SIGTERM, 1);
    (void)cli_guard_send(&st->guard, CLI_GUARD_DEADLINE, 0, kill_at);
}

/* One renewal attempt, when it is due. */
static void renew(run_state *st)
{
    int64_t start = cli_now_ms(), now;
    redislock_err err = redislock_extend(st->l, st->ttl_ms);

    now = cli_now_ms();
    if (err == REDISLOCK_OK) {
        st->next_renew_ms = start + st->renew_every_ms;
        set_kill_by(st, now);
        (void)cli_guard_send(&st->guard, CLI_GUARD_DEADLINE, 0, st->kill_by_ms);
        /* --verbose says so from the event (cli_on_event). */
        return;
    }
    if (err == REDISLOCK_ELOST || err == REDISLOCK_EEXPIRED ||
        err == REDISLOCK_EREVOKED) {
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
    else if (st->verbose)
        cli_err(st->ctx,
                "cannot renew lock '%s' yet: %s; trying again in %lld ms "
                "(valid for %lld ms)",
                st->key, redislock_strerror(err), (long long)st->retry_ms,
                (long long)redislock_valid_ms(st->l));
}

/*
 * The lease was renewed: by run's own extend, or by the library's
 * watchdog, which renews a fair hand-off's short lease to the full TTL
 * soon after the lock is taken. The guardian's deadline moves with it,
 * so that the command is killed only once the lease the library holds
 * has ended.
 */
static void follow_lease(run_state *st)
{
    char buf[64];
    int64_t before = st->kill_by_ms;

    while (read(st->renewed[0], buf, sizeof buf) > 0)
        ;
    if (st->lost)
        return;
    set_kill_by(st, cli_now_ms());
    if (st->kill_by_ms <= before) {
        st->kill_by_ms = before;
        return;
    }
    (void)cli_guard_send(&st->guard, CLI_GUARD_DEADLINE, 0, st->kill_by_ms);
}

/* Gives the terminal back to run's process group if the command's group
 * has it, so that whatever called run can read from it again. */
static void reclaim_tty(const run_state *st)
{
    if (st->tty >= 0 && st->job > 0 && tcgetpgrp(st->tty) == st->job)
        tcsetpgrp(st->tty, getpgrp());
}

/*
 * The command was stopped. A stop by the terminal (Ctrl-Z, or reading it
 * from the background) is passed up as a shell would see it if the
 * command were its job: run takes the terminal back and stops too, and
 * once continued in the foreground gives the terminal to the command
 * again and continues it. Other stops (SIGSTOP) are the sender's affair.
 * While run is stopped nothing renews the lease: past its validity the
 * guardian kills the command.
 */
static void job_stopped(run_state *st, int sig)
{
    if (st->tty < 0 || (sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU))
        return;
    reclaim_tty(st);
    /* A stop ignored or blocked on entry, or an orphaned process group,
     * makes this return at once. */
    if (sig == SIGTSTP || tcgetpgrp(st->tty) != getpgrp())
        raise(SIGTSTP);
    if (tcgetpgrp(st->tty) == getpgrp() && tcsetpgrp(st->tty, st->job) == 0)
        st->handed = 1;
    (void)cli_guard_send(&st->guard, CLI_GUARD_SIGNAL, SIGCONT, 1);
}

/* One message from the guardian. */
static void from_guard(run_state *st)
{
    cli_guard_msg m;

    if (!cli_guard_recv(&st->guard, &m)) {
        /* The guardian died before the command's end: the command died
         * with it (PR_SET_PDEATHSIG); its group goes too. */
        if (st->job > 0)
            kill(-st->job, SIGKILL);
        st->status = -1;
        st->ended = 1;
        return;
    }
    if (m.type == CLI_GUARD_STARTED) {
        st->job = (pid_t)m.val;
    } else if (m.type == CLI_GUARD_FAILED) {
        st->start_err = m.arg;
        st->exec_failed = m.val != 0;
    } else if (m.type == CLI_GUARD_STOPPED) {
        job_stopped(st, m.arg);
    } else if (m.type == CLI_GUARD_EXITED) {
        st->status = m.arg;
        st->expired = m.val != 0;
        st->ended = 1;
    }
}

/*
 * Passes a signal on to the command. One from the terminal (Ctrl-C while
 * run, not the command, has it) goes to the command's whole group, which
 * would have had it but for its own group; others, as kill(1) sent them
 * to run, to the command alone.
 */
static void pass_signal(run_state *st)
{
    struct signalfd_siginfo si;

    if (read(st->sfd, &si, sizeof si) != (ssize_t)sizeof si)
        return;
    (void)cli_guard_send(&st->guard, CLI_GUARD_SIGNAL, (int)si.ssi_signo,
                         si.ssi_code == SI_KERNEL);
}

/* Waits for a signal, a message, a renewal by the library or the next
 * renewal of run's own, and handles it. */
static void wait_event(run_state *st, int64_t now)
{
    struct pollfd p[3];
    int64_t at = now + RUN_IDLE_MS;

    if (!st->lost && st->next_renew_ms < at)
        at = st->next_renew_ms;
    p[0].fd = st->sfd;
    p[1].fd = st->guard.fd;
    p[2].fd = st->renewed[0];
    p[0].events = p[1].events = p[2].events = POLLIN;
    if (poll(p, 3, (int)(at > now ? at - now : 0)) <= 0)
        return;
    if (p[0].revents != 0)
        pass_signal(st);
    if (p[1].revents != 0)
        from_guard(st);
    if (p[2].revents != 0)
        follow_lease(st);
}

/* Runs until the guardian reports the command's end, renewing the
 * lease. */
static void supervise(run_state *st)
{
    while (!st->ended) {
        if (!st->lost && cli_now_ms() >= st->next_renew_ms) {
            renew(st);
            continue;
        }
        wait_event(st, cli_now_ms());
    }
    reclaim_tty(st);
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

/* The command could not be started: nothing ran under the lock. */
static int start_failed(run_state *st)
{
    char q[CLI_QUOTE_MAX];

    (void)redislock_release(st->l);
    if (!st->exec_failed) {
        cli_err(st->ctx, "cannot start a process: %s", strerror(st->start_err));
        return CLI_EXIT_SOFTWARE;
    }
    cli_err(st->ctx, "cannot run '%s': %s", cli_quote(st->cmd, q, sizeof q),
            strerror(st->start_err));
    /* As in sh(1): 127 for a command not found, 126 otherwise. */
    return st->start_err == ENOENT ? 127 : 126;
}

/* --verbose: how the command ended and what became of the lock. */
static void say_done(const run_state *st, redislock_err err)
{
    char how[64];
    int st_ = st->status;

    if (st_ != -1 && WIFSIGNALED(st_))
        snprintf(how, sizeof how, "was killed by signal %d (%s)", WTERMSIG(st_),
                 strsignal(WTERMSIG(st_)));
    else
        snprintf(how, sizeof how, "exited with status %d", child_rc(st_));
    if (err != REDISLOCK_OK)
        cli_err(st->ctx, "the command %s after %lld ms", how,
                (long long)(cli_now_ms() - st->started_ms));
    else
        cli_err(st->ctx, "the command %s after %lld ms; %s lock '%s'%s", how,
                (long long)(cli_now_ms() - st->started_ms),
                st->elect ? "resigned, released" : "released", st->key,
                st->hold_after_ms > 0 ? " (kept reserved: --hold-after)" : "");
}

/* Releases the lock after the command ended and picks the exit status. */
static int finish(run_state *st)
{
    char what[CLI_QUOTE_MAX + 64];
    redislock_err err;

    if (st->start_err != 0)
        return start_failed(st);
    if (st->status == -1)
        cli_err(st->ctx, "lost track of the command's process");
    if (st->expired && !st->lost) {
        cli_err(st->ctx,
                "lock '%s' was not renewed before its lease ran out; "
                "the command was killed",
                st->key);
        st->lost = st->may_hold = 1;
    }
    if (st->lost) {
        /* Best effort: after errors the lease may still be ours. */
        if (st->may_hold)
            (void)redislock_release(st->l);
        return CLI_EXIT_LOST;
    }
    err = st->elect ? redislock_resign(st->l)
                    : redislock_release_hold(st->l, st->hold_after_ms);
    if (st->verbose)
        say_done(st, err);
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

/*
 * Blocks the signals that run passes on before anything can happen that
 * they should affect, and reads them from a signalfd; the command gets
 * the original mask back. SIGTTOU is blocked too, so that run may hand
 * the terminal to the command's group and take it back from the
 * background. Returns 0, or an exit status after a message.
 */
static int take_signals(run_state *st, const cli_global *g)
{
    struct sigaction dfl;
    sigset_t block;

    st->pipe_orig = g->sigpipe_orig;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    /* With SIGCHLD ignored on entry the kernel would reap the guardian
     * itself. */
    sigaction(SIGCHLD, &dfl, &st->chld_orig);
    cli_signal_set(&st->fwd);
    block = st->fwd;
    sigaddset(&block, SIGTTOU);
    sigprocmask(SIG_BLOCK, &block, &st->orig_mask);
    st->sfd = signalfd(-1, &st->fwd, SFD_CLOEXEC | SFD_NONBLOCK);
    if (st->sfd < 0) {
        cli_err(st->ctx, "cannot watch for signals: %s", strerror(errno));
        return CLI_EXIT_SOFTWARE;
    }
    /* The controlling terminal, if any; no error without one. */
    st->tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    return 0;
}

/* The command's environment: the lock's key, token and fencing token
 * (for elect also as REDISLOCK_TERM, the leader's term). Set here rather than
 * in the child, where only async-signal-safe calls belong. */
static int set_env(run_state *st, const char *key, int sequencer)
{
    char fence[24], seq[REDISLOCK_SEQUENCER_MAX];
    int rc;

    /* --sequencer: one round trip more, for the command's resources. */
    if (sequencer) {
        if ((rc = cli_sequencer(st->ctx, st->l, seq)) != 0)
            return rc;
        if (setenv("REDISLOCK_SEQUENCER", seq, 1) != 0) {
            cli_err(st->ctx, "cannot set the environment: %s", strerror(errno));
            return CLI_EXIT_SOFTWARE;
        }
    }

    snprintf(fence, sizeof fence, "%lld", (long long)redislock_fence(st->l));
    if (setenv("REDISLOCK_KEY", key, 1) != 0 ||
        setenv("REDISLOCK_TOKEN", redislock_token(st->l), 1) != 0 ||
        setenv("REDISLOCK_FENCE", fence, 1) != 0 ||
        (st->elect && setenv("REDISLOCK_TERM", fence, 1) != 0)) {
        cli_err(st->ctx, "cannot set the environment: %s", strerror(errno));
        return CLI_EXIT_SOFTWARE;
    }
    return 0;
}

/* --verbose: what runs, and when the lease is renewed. */
static void say_started(const run_state *st, char **cmd)
{
    char q[CLI_QUOTE_MAX];
    int sh = cmd[1] != NULL && strcmp(cmd[1], "-c") == 0 && cmd[2] != NULL &&
             strcmp(cmd[0], "/bin/sh") == 0;

    cli_err(st->ctx, "running %s'%s'; renewing the lease every %lld ms",
            sh ? "/bin/sh -c " : "",
            cli_quote(sh ? cmd[2] : cmd[0], q, sizeof q),
            (long long)st->renew_every_ms);
}

static int hold_and_run(run_state *st, const cli_cmdopts *o, const char *key,
                        char **cmd)
{
    int64_t now;
    int rc;

    if (!cli_take(st->ctx, st->l, o, &st->fwd, &rc))
        return rc;
    now = cli_now_ms();
    st->next_renew_ms = now + st->renew_every_ms;
    set_kill_by(st, now);
    if ((rc = set_env(st, key, o->sequencer)) == 0)
        rc = spawn(st, cmd);
    if (rc != 0) {
        (void)redislock_release(st->l);
        return rc;
    }
    st->started_ms = cli_now_ms();
    if (st->verbose)
        say_started(st, cmd);
    supervise(st);
    /* The guardian sends the command's end only once all it guards is
     * dead and reaped: the lock is released while the guardian exits,
     * rather than after. */
    rc = finish(st);
    cli_guard_end(&st->guard);
    return rc;
}

static void run_init(run_state *st, const char *ctx, const char *key,
                     const cli_cmdopts *o)
{
    redislock_options scratch;

    memset(st, 0, sizeof *st);
    st->ctx = ctx;
    st->guard.pid = st->job = -1;
    st->guard.fd = st->sfd = st->tty = -1;
    st->renewed[0] = st->renewed[1] = -1;
    cli_quote(key, st->key, sizeof st->key);
    set_timing(st, o->acq.ttl_ms);
    memset(&scratch, 0, sizeof scratch);
    st->op_ms = cli_set_timeouts(&o->g, st->op_cap_ms, &scratch);
    st->hold_after_ms = o->hold_after_ms;
    st->verbose = o->verbose;
    st->elect = o->elect;
}

static void close_pipe(int p[2])
{
    if (p[0] >= 0)
        close(p[0]);
    if (p[1] >= 0)
        close(p[1]);
    p[0] = p[1] = -1;
}

/* The pipe the client's renewals write to, non-blocking both ends: the
 * library's thread must never wait on it. Returns 0, or an exit status
 * after a message. */
static int renewal_pipe(run_state *st, cli_cmdopts *o)
{
    int i, ok = pipe(st->renewed) == 0;

    for (i = 0; ok && i < 2; i++)
        ok = fcntl(st->renewed[i], F_SETFD, FD_CLOEXEC) == 0 &&
             fcntl(st->renewed[i], F_SETFL, O_NONBLOCK) == 0;
    if (!ok) {
        cli_err(st->ctx, "cannot make a pipe: %s", strerror(errno));
        close_pipe(st->renewed);
        return CLI_EXIT_SOFTWARE;
    }
    o->ev.renewed_fd = st->renewed[1];
    return 0;
}

/* Whether the terminal's Ctrl-C killed the command: its group had the
 * terminal and it died of SIGINT. */
static int interrupted(const run_state *st)
{
    return st->handed && !st->lost && st->start_err == 0 && st->status != -1 &&
           WIFSIGNALED(st->status) && WTERMSIG(st->status) == SIGINT &&
           sigismember(&st->fwd, SIGINT);
}

/*
 * Ctrl-C went to the command's group alone, where without run's hand-over
 * it would have reached run's group too, with whatever shell script
 * called run. Now that the lock is released, it goes there: run dies of
 * it, and the script stops as it would have.
 */
static void pass_interrupt_up(void)
{
    struct sigaction dfl;
    sigset_t set;

    fflush(NULL);
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGINT, &dfl, NULL);
    kill(0, SIGINT);
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
}

/*
 * What follows KEY, as flock(1) reads what follows its file: "-c STRING"
 * or "--command STRING" (exactly one string, for sh -c), or COMMAND
 * [ARG...], optionally after "--", which makes "-c" an argument like any
 * other. -c before KEY excludes a COMMAND after it. Sets *cmd to the
 * command's argv (sh_argv for a string), or returns a usage error.
 */
static int pick_command(const char *ctx, int argc, char **argv, const char *str,
                        char **sh_argv, char ***cmd)
{
    int i = 0;

    if (argc > 0 && str == NULL) {
        if (strncmp(argv[0], "--command=", 10) == 0)
            str = argv[i++] + 10;
        else if (strcmp(argv[0], "-c") == 0 ||
                 strcmp(argv[0], "--command") == 0)
            str = ++i < argc ? argv[i++] : NULL;
        if (i > 0 && (str == NULL || i < argc))
            return cli_usage(ctx, "%s takes exactly one command string",
                             argv[0][1] == 'c' ? "-c" : "--command");
        if (i == 0 && strcmp(argv[0], "--") == 0)
            argv++, argc--;
    } else if (argc > 0) {
        return cli_usage(ctx, "-c and a COMMAND after KEY exclude each "
                              "other");
    }
    if (str != NULL) {
        sh_argv[0] = (char *)"/bin/sh";
        sh_argv[1] = (char *)"-c";
        sh_argv[2] = (char *)str;
        sh_argv[3] = NULL;
        *cmd = sh_argv;
        return 0;
    }
    if (argc == 0)
        return cli_usage(ctx, "missing COMMAND (or -c STRING) after KEY");
    *cmd = argv;
    return 0;
}

/* What run's options allow that an election does not: it is one key,
 * exclusive, taken once, its value given by --value. */
static int check_elect(const char *ctx, cli_cmdopts *o)
{
    if (o->acq.shared || o->nkeys > 0 || o->acq.metadata != NULL ||
        o->sequencer || o->acq.lock_delay_ms > 0)
        return cli_usage(ctx,
                         "an election is one key, held exclusively: not "
                         "with %s",
                         o->acq.shared             ? "-s/--shared"
                         : o->nkeys > 0            ? "-k/--key"
                         : o->acq.metadata != NULL ? "--metadata (use --value)"
                         : o->sequencer            ? "--sequencer"
                                                   : "--lock-delay");
    /* --owner names the candidate here; a campaign is never reentrant. */
    o->acq.reentrant = 0;
    o->elect = 1;
    return 0;
}

static int run_main(int argc, char **argv, const cli_global *g,
                    const cli_optdef *defs, int elect)
{
    static const char *const names[] = {"KEY", "COMMAND"};
    redislock_client *c;
    cli_cmdopts o;
    run_state st;
    const char *key;
    char *sh_argv[4], **cmd = NULL;
    int rc;

    rc = cli_cmd_options(argc, argv, g, defs, 1, -1, names, &o);
    if (rc != CLI_CONTINUE)
        return rc;
    if (elect && (rc = check_elect(argv[0], &o)) != 0)
        return rc;
    if ((rc = cli_check_shared(argv[0], &o)) != 0 ||
        (rc = cli_check_set(argv[0], &o)) != 0)
        return rc;
    if (o.acq.limit > 0 && o.hold_after_ms > 0)
        return cli_usage(argv[0], "--hold-after is for a lock, not a "
                                  "semaphore's permit (--limit)");
    key = argv[o.operand];
    if ((rc = pick_command(argv[0], argc - o.operand - 1, argv + o.operand + 1,
                           o.command, sh_argv, &cmd)) != 0 ||
        (rc = cli_check_key(argv[0], key)) != 0)
        return rc;
    run_init(&st, argv[0], key, &o);
    if ((rc = renewal_pipe(&st, &o)) != 0)
        return rc;
    rc = cli_open(st.ctx, &o.g, key, &o, st.op_cap_ms, &c, &st.l);
    if (rc != 0) {
        close_pipe(st.renewed);
        return rc;
    }
    /* The client has its copy of any password from the environment. */
    cli_scrub_env(&o.g);
    if ((rc = take_signals(&st, g)) == 0)
        rc = hold_and_run(&st, &o, key, cmd);
    if (st.sfd >= 0)
        close(st.sfd);
    if (st.tty >= 0)
        close(st.tty);
    cli_close(c, st.l);
    /* After the client: its callback writes to the pipe until then. */
    close_pipe(st.renewed);
    if (interrupted(&st))
        pass_interrupt_up();
    return rc;
}

int cli_cmd_run(int argc, char **argv, const cli_global *g)
{
    static const cli_optdef defs[] = {
        CLI_OPTS_COMMON,
        CLI_OPTS_TAKE,
        CLI_OPTS_GUARDS,
        {CLI_ID_HOLD_AFTER, "hold-after", 1},
        {CLI_ID_LIMIT, "limit", 1},
        {'c', "command", 1},
        {0, NULL, 0},
    };

    return run_main(argc, argv, g, defs, 0);
}

int cli_cmd_elect(int argc, char **argv, const cli_global *g)
{
    static const cli_optdef defs[] = {
        CLI_OPTS_COMMON,     CLI_OPTS_TAKE,
        CLI_OPTS_GUARDS,     {CLI_ID_VALUE, "value", 1},
        {'c', "command", 1}, {0, NULL, 0},
    };

    return run_main(argc, argv, g, defs, 1);
}
