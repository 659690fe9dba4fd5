/* The subcommands that make one request: acquire, release, extend,
 * status. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const char *const key_names[] = {"KEY", "TOKEN"};

/* Prints the token for the caller to keep, and with --sequencer the
 * lock's sequencer on a second line. A token nobody saw would leave the
 * lock held until its TTL for nothing, so it is released when the write
 * (or the sequencer) fails. */
static int print_token(const char *ctx, redislock_lock *l, int sequencer)
{
    char seq[REDISLOCK_SEQUENCER_MAX];
    int rc;

    if (sequencer && (rc = cli_sequencer(ctx, l, seq)) != 0) {
        (void)redislock_release(l);
        return rc;
    }
    if (printf("%s\n", redislock_token(l)) < 0 ||
        (sequencer && printf("%s\n", seq) < 0) || fflush(stdout) != 0) {
        (void)redislock_release(l);
        cli_err(ctx, "cannot write the token to standard output");
        return CLI_EXIT_SOFTWARE;
    }
    return CLI_EXIT_OK;
}

/*
 * A fair hand-off grants only what is left of the waiter's liveness (3 to
 * 5 s), which the library's watchdog renews to the TTL a third of the way
 * in; acquire exits before then, so it renews the lease itself, lest the
 * token it prints expire long before the TTL asked for. Returns 0, or an
 * exit status after a message, the lock given back.
 */
static int full_lease(const char *ctx, redislock_lock *l, const cli_cmdopts *o)
{
    redislock_err err;
    int rc;

    if (!o->acq.fair || redislock_valid_ms(l) >= o->acq.ttl_ms / 10 * 9)
        return 0;
    err = redislock_extend(l, o->acq.ttl_ms);
    if (err == REDISLOCK_OK)
        return 0;
    rc = cli_fail(ctx, err, "cannot renew a hand-off's short lease to the TTL");
    /* Best effort: if this fails the short lease ends soon. */
    (void)redislock_release(l);
    return rc;
}

int cli_cmd_acquire(int argc, char **argv, const cli_global *g)
{
    static const cli_optdef defs[] = {
        CLI_OPTS_COMMON, CLI_OPTS_TAKE,
        CLI_OPTS_GUARDS, {CLI_ID_LIMIT, "limit", 1},
        {0, NULL, 0},
    };
    const char *ctx = argv[0];
    redislock_client *c;
    redislock_lock *l;
    cli_cmdopts o;
    sigset_t stop;
    int rc;

    rc = cli_cmd_options(argc, argv, g, defs, 1, 1, key_names, &o);
    if (rc != CLI_CONTINUE)
        return rc;
    if ((rc = cli_check_shared(ctx, &o)) != 0 ||
        (rc = cli_check_set(ctx, &o)) != 0 ||
        (rc = cli_check_key(ctx, argv[o.operand])) != 0 ||
        (rc = cli_open(ctx, &o.g, argv[o.operand], &o, 0, &c, &l)) != 0)
        return rc;
    /* A signal while waiting ends the wait cleanly, even when it comes
     * just as the lock is taken. */
    cli_signal_set(&stop);
    sigprocmask(SIG_BLOCK, &stop, NULL);
    /* Only a lock taken prints a token: with -E 0 a conflict also exits
     * 0, with nothing on standard output (nor on standard error unless
     * --verbose), as flock -E 0 would. */
    if (cli_take(ctx, l, &o, &stop, &rc) && (rc = full_lease(ctx, l, &o)) == 0)
        rc = print_token(ctx, l, o.sequencer);
    cli_close(c, l);
    return rc;
}

/* What release and extend act on, for a message: "lock 'KEY'", or with
 * -k "the set {KEY, KEY2, ...}" in the order given, so that a key list
 * the library refuses shows as the caller wrote it. */
static void target_text(const char *key, const cli_cmdopts *o, char *buf,
                        size_t size)
{
    char q[CLI_QUOTE_MAX];
    size_t n;
    int i;

    if (o->nkeys == 0) {
        snprintf(buf, size, "lock '%s'", cli_quote(key, q, sizeof q));
        return;
    }
    snprintf(buf, size, "the set {%s", cli_quote(key, q, sizeof q));
    for (i = 0; i < o->nkeys; i++) {
        n = strlen(buf);
        snprintf(buf + n, size - n, ", %s", cli_quote(o->keys[i], q, sizeof q));
    }
    n = strlen(buf);
    snprintf(buf + n, size - n, "}");
}

/* The exit status of release and extend of l (its key key, the set's
 * other keys in o). A token that holds nothing may have been a permit or
 * a share of a key others hold, or a lease that ended and a key taken
 * since: "expired and free" only when the key is free. */
static int outcome(const char *ctx, redislock_lock *l, redislock_err err,
                   const char *key, const cli_cmdopts *o, const char *verb)
{
    char q[CLI_QUOTE_MAX], what[1024], holder[512];

    cli_quote(key, q, sizeof q);
    switch (err) {
    case REDISLOCK_OK:
        return CLI_EXIT_OK;
    case REDISLOCK_EEXPIRED:
        if (cli_holder_text(l, holder, sizeof holder) == 0)
            cli_err(ctx, "lock '%s' had expired and is free", q);
        else
            cli_err(ctx,
                    "lock '%s': this token holds no part of it (its lease "
                    "ended, or it was released); %s",
                    q, holder);
        return CLI_EXIT_FREE;
    case REDISLOCK_ELOST:
        cli_err(ctx, "lock '%s' is held by another owner", q);
        return CLI_EXIT_OTHER_OWNER;
    default:
        /* A set's keys that are not its set's are REDISLOCK_EINVAL. */
        snprintf(what, sizeof what, "cannot %s ", verb);
        target_text(key, o, what + strlen(what), sizeof what - strlen(what));
        return cli_fail(ctx, err, what);
    }
}

/* The token operand, or with --owner the owner id instead of one. */
static int pick_token(const char *ctx, int argc, char **argv,
                      const cli_cmdopts *o, const char **token)
{
    int have = argc - o->operand;

    if (o->acq.owner != NULL) {
        if (have > 1)
            return cli_usage(ctx, "unexpected argument: --owner takes the "
                                  "place of TOKEN");
        *token = o->acq.owner;
        return 0;
    }
    if (have < 2)
        return cli_usage(ctx, "missing TOKEN (or --owner ID)");
    *token = argv[o->operand + 1];
    return cli_check_token(ctx, "token", *token);
}

/* Shared by release and extend: both act for a token from acquire, or for
 * an owner id, whose reentrant lock loses or renews one hold. */
static int act_for_token(int argc, char **argv, const cli_global *g,
                         const cli_optdef *defs)
{
    const char *ctx = argv[0];
    const char *key, *token = NULL;
    redislock_client *c;
    redislock_lock *l;
    cli_cmdopts o;
    redislock_err err;
    int rc;

    rc = cli_cmd_options(argc, argv, g, defs, 1, 2, key_names, &o);
    if (rc != CLI_CONTINUE)
        return rc;
    key = argv[o.operand];
    if ((rc = pick_token(ctx, argc, argv, &o, &token)) != 0 ||
        (rc = cli_check_set(ctx, &o)) != 0 ||
        (rc = cli_check_key(ctx, key)) != 0 ||
        (rc = cli_open(ctx, &o.g, key, &o, 0, &c, &l)) != 0)
        return rc;
    err = redislock_adopt(l, token);
    if (err == REDISLOCK_OK)
        err = redislock_set_lock_delay(l, o.acq.lock_delay_ms);
    if (err != REDISLOCK_OK)
        rc = cli_fail(ctx, err, "invalid token or lock-delay");
    else if (strcmp(ctx, "release") == 0)
        rc = outcome(ctx, l, redislock_release_hold(l, o.hold_after_ms), key,
                     &o, "release");
    else if ((rc = outcome(ctx, l, redislock_extend(l, o.acq.ttl_ms), key, &o,
                           "extend")) == CLI_EXIT_OK)
        cli_warn_guards(ctx, l, &o.g);
    cli_close(c, l);
    return rc;
}

int cli_cmd_release(int argc, char **argv, const cli_global *g)
{
    static const cli_optdef defs[] = {
        CLI_OPTS_COMMON,
        {CLI_ID_OWNER, "owner", 1},
        {CLI_ID_HOLD_AFTER, "hold-after", 1},
        {'k', "key", 1},
        {0, NULL, 0},
    };

    return act_for_token(argc, argv, g, defs);
}

int cli_cmd_extend(int argc, char **argv, const cli_global *g)
{
    static const cli_optdef defs[] = {
        CLI_OPTS_COMMON,
        {'t', "ttl", 1},
        {CLI_ID_OWNER, "owner", 1},
        {'k', "key", 1},
        {CLI_ID_LOCK_DELAY, "lock-delay", 1},
        CLI_OPTS_GUARDS,
        {0, NULL, 0},
    };

    return act_for_token(argc, argv, g, defs);
}

/* The exit status of a revocation's outcome: a key whose holder cannot
 * hear it is in use as another kind (the reason was checked before). */
static int revoke_exit(const char *ctx, const char *key, redislock_err err)
{
    char q[CLI_QUOTE_MAX], what[CLI_QUOTE_MAX + 32];

    snprintf(what, sizeof what, "cannot revoke '%s'",
             cli_quote(key, q, sizeof q));
    if (err == REDISLOCK_EEXPIRED) {
        cli_err(ctx, "nothing to revoke: '%s' is free", q);
        return CLI_EXIT_FREE;
    }
    if (err == REDISLOCK_EINVAL) {
        (void)cli_fail(ctx, err, what);
        return CLI_EXIT_KIND;
    }
    return cli_fail(ctx, err, what);
}

int cli_cmd_revoke(int argc, char **argv, const cli_global *g)
{
    static const cli_optdef defs[] = {
        CLI_OPTS_COMMON,
        {CLI_ID_REASON, "reason", 1},
        {0, NULL, 0},
    };
    const char *ctx = argv[0];
    const char *key;
    redislock_client *c;
    redislock_lock *l;
    cli_cmdopts o;
    redislock_err err;
    size_t i, n;
    int rc;

    rc = cli_cmd_options(argc, argv, g, defs, 1, 1, key_names, &o);
    if (rc != CLI_CONTINUE)
        return rc;
    key = argv[o.operand];
    if ((rc = cli_check_key(ctx, key)) != 0)
        return rc;
    /* The library's bounds, named here before anything connects. */
    n = o.reason != NULL ? strlen(o.reason) : 0;
    if (n > REDISLOCK_REVOKE_REASON_MAX)
        return cli_usage(ctx, "--reason of %zu bytes: at most %d", n,
                         REDISLOCK_REVOKE_REASON_MAX);
    for (i = 0; i < n; i++)
        if ((unsigned char)o.reason[i] < 0x20 ||
            (unsigned char)o.reason[i] > 0x7e)
            return cli_usage(ctx, "--reason must be printable ASCII");
    if ((rc = cli_open(ctx, &o.g, key, NULL, 0, &c, &l)) != 0)
        return rc;
    err = redislock_revoke(l, o.reason);
    rc = err == REDISLOCK_OK ? CLI_EXIT_OK : revoke_exit(ctx, key, err);
    cli_close(c, l);
    return rc;
}

/* check KEY SEQUENCER: whether the holder the sequencer names still
 * holds KEY, for a resource about to act on a writer's behalf. Quiet
 * when it does; a stale or free lock is one line on stderr. */
int cli_cmd_check(int argc, char **argv, const cli_global *g)
{
    static const char *const names[] = {"KEY", "SEQUENCER"};
    static const cli_optdef defs[] = {
        CLI_OPTS_COMMON,
        {0, NULL, 0},
    };
    const char *ctx = argv[0];
    const char *key, *seq;
    char q[CLI_QUOTE_MAX], what[CLI_QUOTE_MAX + 32];
    redislock_client *c;
    redislock_lock *l;
    cli_cmdopts o;
    redislock_err err;
    int rc;

    rc = cli_cmd_options(argc, argv, g, defs, 2, 2, names, &o);
    if (rc != CLI_CONTINUE)
        return rc;
    key = argv[o.operand];
    seq = argv[o.operand + 1];
    if ((rc = cli_check_key(ctx, key)) != 0)
        return rc;
    if ((rc = cli_open(ctx, &o.g, key, NULL, 0, &c, &l)) != 0)
        return rc;
    err = redislock_check_sequencer(l, seq);
    cli_close(c, l);
    cli_quote(key, q, sizeof q);
    switch (err) {
    case REDISLOCK_OK:
        return CLI_EXIT_OK;
    case REDISLOCK_EEXPIRED:
        cli_err(ctx, "stale sequencer: lock '%s' is free", q);
        return CLI_EXIT_FREE;
    case REDISLOCK_ESTALE:
        cli_err(ctx,
                "stale sequencer: lock '%s' is held by another holder, or "
                "was taken again since",
                q);
        return CLI_EXIT_OTHER_OWNER;
    case REDISLOCK_EINVAL:
        if (strstr(redislock_errdetail(), "not a sequencer") != NULL)
            return cli_usage(ctx,
                             "'%s' is not a sequencer: want FENCE:DIGEST "
                             "as run and acquire --sequencer print",
                             cli_quote(seq, what, sizeof what));
        /* Held by many: nothing a sequencer can name yet. */
        snprintf(what, sizeof what, "cannot check a sequencer of '%s'", q);
        (void)cli_fail(ctx, err, what);
        return CLI_EXIT_KIND;
    default:
        break;
    }
    snprintf(what, sizeof what, "cannot check a sequencer of '%s'", q);
    return cli_fail(ctx, err, what);
}

int cli_cmd_status(int argc, char **argv, const cli_global *g)
{
    static const cli_optdef defs[] = {
        CLI_OPTS_COMMON,
        {CLI_ID_JSON, "json", 0},
        {0, NULL, 0},
    };
    const char *ctx = argv[0];
    const char *key;
    redislock_client *c;
    redislock_lock *l;
    redislock_info info;
    cli_cmdopts o;
    redislock_err err;
    int rc;

    rc = cli_cmd_options(argc, argv, g, defs, 1, 1, key_names, &o);
    if (rc != CLI_CONTINUE)
        return rc;
    key = argv[o.operand];
    if ((rc = cli_check_key(ctx, key)) != 0 ||
        (rc = cli_open(ctx, &o.g, key, NULL, 0, &c, &l)) != 0)
        return rc;
    err = redislock_inspect(l, &info);
    if (err != REDISLOCK_OK) {
        rc = cli_fail(ctx, err, "cannot read the lock's state");
    } else {
        cli_print_lock(key, strlen(key), &info, o.json, 0);
        if (o.json)
            putchar('\n');
    }
    cli_close(c, l);
    return rc;
}
