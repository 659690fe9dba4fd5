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

/* How long one observe waits, so that a signal is heard soon after. */
#define WATCH_SLICE_MS 250

/* Follows the changes after s until a signal in sfd comes: 0, or an exit
 * status after a message. */
static int watch(const char *ctx, redislock_lock *l, redislock_leader_info *s,
                 int sfd, int json)
{
    struct pollfd p = {sfd, POLLIN, 0};
    redislock_err err;

    while (poll(&p, 1, 0) == 0) {
        if ((err = redislock_observe(l, s, WATCH_SLICE_MS)) != REDISLOCK_OK)
            return cli_fail(ctx, err, "cannot follow the election");
        if (s->kind == REDISLOCK_CHANGE_NONE)
            continue;
        cli_print_leader(s, json, 1);
        putchar('\n');
        /* Each change as it comes, for a pipe too. */
        if (fflush(stdout) != 0) {
            cli_err(ctx, "cannot write to standard output");
            return CLI_EXIT_SOFTWARE;
        }
    }
    return CLI_EXIT_OK;
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
            rc = watch(ctx, l, &s, sfd, o.json);
    }
    cli_close(c, l);
out:
    if (sfd >= 0)
        close(sfd);
    return rc;
}
