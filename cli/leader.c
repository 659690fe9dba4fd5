/*
 * redislock leader: print an election's leader, and with --watch follow
 * its changes (redislock_observe) until SIGINT or SIGTERM, one line each,
 * a gap with the state read again.
 */
#include "cli.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

/* How long one observe waits before it is asked again (a wait sends
 * nothing while nothing changes: its read is tracked). */
#define WATCH_WAIT_MS 60000

/* The sockets a loop may watch at once: a node's request connection and
 * its two for the notices, more after a cluster's or Sentinel's change. */
#define WATCH_FDS 16

/* A redislock_loop driven by poll(): the signals' fd first, then the
 * sockets the loop watches; its timer as a deadline. */
typedef struct wloop {
    struct pollfd fd[1 + WATCH_FDS];
    int nfd;
    int64_t due_ms; /* on cli_now_ms()'s clock; -1: no timer */
    int full;       /* a socket found no room */
} wloop;

/* The loop's watch callback: what to poll fd for (0: no longer). */
static void w_watch(void *ctx, int fd, int what)
{
    wloop *w = ctx;
    short ev = (short)(((what & REDISLOCK_WATCH_READ) ? POLLIN : 0) |
                       ((what & REDISLOCK_WATCH_WRITE) ? POLLOUT : 0));
    int i;

    for (i = 1; i < w->nfd && w->fd[i].fd != fd; i++)
        ;
    if (ev == 0) {
        if (i < w->nfd)
            w->fd[i] = w->fd[--w->nfd];
        return;
    }
    if (i == w->nfd) {
        if (w->nfd == 1 + WATCH_FDS) {
            w->full = 1;
            return;
        }
        w->nfd++;
    }
    w->fd[i] = (struct pollfd){fd, ev, 0};
}

static void w_timer(void *ctx, int64_t ms)
{
    wloop *w = ctx;

    w->due_ms = ms < 0 ? -1 : cli_now_ms() + ms;
}

/* A watch's state between its callbacks. */
typedef struct watching {
    const char *ctx;
    redislock_loop *lp;
    redislock_leader_info *s;
    int json;
    int rc;      /* CLI_CONTINUE while it goes on */
    int failing; /* the last observe failed, and it was said */
} watching;

/* Whether an observe that failed with err (after its whole wait: each
 * read that met it was tried again) is started again: the servers were
 * unavailable (cli_exit_for's class: the server or its master may come
 * back, a failover end). Anything else ends the watch. */
static int still_trying(redislock_err err)
{
    return cli_exit_for(err) == CLI_EXIT_UNAVAILABLE;
}

static void observed(redislock_lock *l, redislock_err err, void *arg)
{
    watching *wt = arg;

    if (wt->rc != CLI_CONTINUE)
        return; /* ended (the loop freed) */
    if (err != REDISLOCK_OK && !still_trying(err)) {
        wt->rc = cli_fail(wt->ctx, err, "cannot follow the election");
        return;
    }
    /* A watch rides through what the servers may recover from, saying
     * so on standard error once a wait went by without a read, and once
     * they can be read again; what it missed meanwhile comes as a gap. */
    if (err != REDISLOCK_OK) {
        cli_fail(wt->ctx, err, "cannot read the election; still trying");
        wt->failing = 1;
    } else if (wt->failing) {
        cli_err(wt->ctx, "reading the election again");
        wt->failing = 0;
    }
    if (err != REDISLOCK_OK)
        wt->s->kind = REDISLOCK_CHANGE_NONE;
    if (wt->s->kind != REDISLOCK_CHANGE_NONE) {
        cli_print_leader(wt->s, wt->json, 1);
        putchar('\n');
        /* Each change as it comes, for a pipe too. */
        if (fflush(stdout) != 0) {
            cli_err(wt->ctx, "cannot write to standard output");
            wt->rc = CLI_EXIT_SOFTWARE;
            return;
        }
    }
    if ((err = redislock_loop_observe(wt->lp, l, wt->s, WATCH_WAIT_MS, observed,
                                      wt)) != REDISLOCK_OK)
        wt->rc = cli_fail(wt->ctx, err, "cannot follow the election");
}

/* Follows the changes after s until a signal in sfd comes, on an event
 * loop of its own (so that the signal is heard while an observe waits):
 * 0, or an exit status after a message. */
static int watch(const char *ctx, redislock_client *c, redislock_lock *l,
                 redislock_leader_info *s, int sfd, int json)
{
    wloop w = {.nfd = 1, .due_ms = -1};
    watching wt = {ctx, NULL, s, json, CLI_CONTINUE, 0};
    struct pollfd ready[1 + WATCH_FDS];
    redislock_err err;
    int i, n, wait;

    w.fd[0] = (struct pollfd){sfd, POLLIN, 0};
    if ((err = redislock_loop_new(&wt.lp, c, w_watch, w_timer, &w)) !=
        REDISLOCK_OK)
        return cli_fail(ctx, err, "cannot follow the election");
    if ((err = redislock_loop_observe(wt.lp, l, s, WATCH_WAIT_MS, observed,
                                      &wt)) != REDISLOCK_OK)
        wt.rc = cli_fail(ctx, err, "cannot follow the election");
    while (wt.rc == CLI_CONTINUE) {
        if (w.full) {
            cli_err(ctx, "more than %d sockets to watch", WATCH_FDS);
            wt.rc = CLI_EXIT_SOFTWARE;
            break;
        }
        wait = -1;
        if (w.due_ms >= 0) {
            int64_t left = w.due_ms - cli_now_ms();
            wait = left <= 0 ? 0 : left > 60000 ? 60000 : (int)left;
        }
        n = w.nfd;
        memcpy(ready, w.fd, (size_t)n * sizeof *ready);
        if (poll(ready, (nfds_t)n, wait) < 0 && errno != EINTR) {
            cli_err(ctx, "poll: %s", strerror(errno));
            wt.rc = CLI_EXIT_SOFTWARE;
            break;
        }
        if (ready[0].revents != 0) {
            wt.rc = CLI_EXIT_OK;
            break;
        }
        /* The loop may change what it watches in each call: the events
         * were copied first. */
        for (i = 1; i < n && wt.rc == CLI_CONTINUE; i++)
            if (ready[i].revents != 0)
                redislock_loop_io(
                    wt.lp, ready[i].fd,
                    ((ready[i].revents & (POLLIN | POLLERR | POLLHUP))
                         ? REDISLOCK_WATCH_READ
                         : 0) |
                        ((ready[i].revents & (POLLOUT | POLLERR))
                             ? REDISLOCK_WATCH_WRITE
                             : 0));
        if (wt.rc == CLI_CONTINUE && w.due_ms >= 0 &&
            cli_now_ms() >= w.due_ms) {
            w.due_ms = -1;
            redislock_loop_timeout(wt.lp);
        }
    }
    /* Ends the observe under way (its callback sees rc set). */
    n = wt.rc;
    redislock_loop_free(wt.lp);
    return n;
}

/* SIGINT and SIGTERM, blocked and read from a signalfd: the end of a
 * watch. Returns the fd, or -1 after a message. */
static int stop_signals(const char *ctx)
{
    sigset_t set;
    int fd;

    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, NULL);
    if ((fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
        cli_err(ctx, "cannot watch for signals: %s", strerror(errno));
    return fd;
}

int cli_cmd_leader(int argc, char **argv, const cli_global *g)
{
    static const cli_optdef defs[] = {
        CLI_OPTS_COMMON,
        {CLI_ID_JSON, "json", 0},
        {CLI_ID_WATCH, "watch", 0},
        {0, NULL, 0},
    };
    static const char *const names[] = {"NAME"};
    const char *ctx = argv[0];
    redislock_client *c;
    redislock_lock *l;
    redislock_leader_info s;
    cli_cmdopts o;
    redislock_err err;
    int rc, sfd = -1;

    rc = cli_cmd_options(argc, argv, g, defs, 1, 1, names, &o);
    if (rc != CLI_CONTINUE)
        return rc;
    if ((rc = cli_check_key(ctx, argv[o.operand])) != 0)
        return rc;
    if (o.watch && (sfd = stop_signals(ctx)) < 0)
        return CLI_EXIT_SOFTWARE;
    if ((rc = cli_open(ctx, &o.g, argv[o.operand], NULL, 0, &c, &l)) != 0)
        goto out;
    memset(&s, 0, sizeof s);
    if ((err = redislock_leader(l, &s)) != REDISLOCK_OK) {
        rc = cli_fail(ctx, err, "cannot read the election");
    } else {
        cli_print_leader(&s, o.json, 0);
        putchar('\n');
        /* Without --watch, as status: 1 when there is no leader. */
        rc = s.has_leader ? CLI_EXIT_OK : CLI_EXIT_FREE;
        if (o.watch && fflush(stdout) == 0)
            rc = watch(ctx, c, l, &s, sfd, o.json);
    }
    cli_close(c, l);
out:
    if (sfd >= 0)
        close(sfd);
    return rc;
}
