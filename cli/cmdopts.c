/* The options of the subcommands: one table of meanings for every
 * subcommand, each of which lists the options it accepts. */
#include "cli.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

int cli_add_url(const char *ctx, cli_global *g, const char *url)
{
    if (g->nurls >= CLI_URLS_MAX)
        return cli_usage(ctx, "more than %d Redis URLs", CLI_URLS_MAX);
    g->urls[g->nurls++] = url;
    return 0;
}

/* The first entry of defs for id: its short and first long name. */
static const cli_optdef *def_of(const cli_optdef *defs, int id)
{
    for (; defs->id != 0; defs++)
        if (defs->id == id)
            return defs;
    return NULL;
}

/* "-t/--ttl" or "--limit", for messages. */
static const char *opt_name(const cli_optdef *d, char *buf, size_t size)
{
    if (d->id < 256)
        snprintf(buf, size, "-%c/--%s", d->id, d->longname);
    else
        snprintf(buf, size, "--%s", d->longname);
    return buf;
}

/* g->given's marks: the option itself, or for the wait (-w) whether -n
 * gave it. */
enum { GIVEN = 1, GIVEN_BY_N = 2 };

int cli_note_option(const char *ctx, cli_global *g, const cli_optdef *defs,
                    int id)
{
    const cli_optdef *d = def_of(defs, id);
    char name[64];
    int slot = id == 'n' ? 'w' : id;
    int was = g->given[slot];

    if (d == NULL || id == 'u' || id == 'k' || (!d->has_arg && id != 'n'))
        return 0;
    g->given[slot] = id == 'n' ? GIVEN_BY_N : GIVEN;
    if (was == 0 || (was == GIVEN_BY_N && id == 'n'))
        return 0;
    if (slot == 'w' && (was == GIVEN_BY_N || id == 'n'))
        return cli_usage(ctx, "-n/--nonblock and -w/--wait both set the "
                              "wait: give one of them");
    return cli_usage(ctx, "%s given twice: give it once",
                     opt_name(d, name, sizeof name));
}

/* The TLS options that name a file, a directory or a name: each must
 * be one (an empty value is a usage error). */
static int tls_file(const char *ctx, cli_global *g, int id, const char *val)
{
    static const struct {
        int id;
        const char *name;
        size_t at;
    } opts[] = {
        {CLI_ID_CACERT, "--cacert", offsetof(cli_global, cacert)},
        {CLI_ID_CACERTDIR, "--cacertdir", offsetof(cli_global, cacertdir)},
        {CLI_ID_CERT, "--cert", offsetof(cli_global, cert)},
        {CLI_ID_TLS_KEY, "--tls-key", offsetof(cli_global, tls_key)},
        {CLI_ID_SNI, "--sni", offsetof(cli_global, sni)},
    };
    size_t i;

    for (i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        if (opts[i].id != id)
            continue;
        if (*val == '\0')
            return cli_usage(ctx, "%s needs a value", opts[i].name);
        *(const char **)((char *)g + opts[i].at) = val;
        return 0;
    }
    return CLI_CONTINUE;
}

int cli_global_option(const char *ctx, cli_global *g, int id, const char *val)
{
    switch (id) {
    case 'u':
        return cli_add_url(ctx, g, val);
    case CLI_ID_CONNECT_TIMEOUT:
        return cli_parse_timeout(ctx, "connect timeout", val,
                                 &g->connect_timeout_ms);
    case CLI_ID_COMMAND_TIMEOUT:
        return cli_parse_timeout(ctx, "command timeout", val,
                                 &g->command_timeout_ms);
    case CLI_ID_TLS:
        g->tls = 1;
        return 0;
    case CLI_ID_INSECURE:
        g->insecure = 1;
        return 0;
    }
    return tls_file(ctx, g, id, val);
}

/* The durability guards' options (cli_global's wait_*). */
static int apply_guard_option(const char *ctx, int id, const char *val,
                              cli_global *g)
{
    switch (id) {
    case CLI_ID_WAIT_REPLICAS:
        /* "all": every replica the master has had (REDISLOCK_REPLICAS_ALL). */
        if (strcmp(val, "all") == 0) {
            g->wait_replicas = REDISLOCK_REPLICAS_ALL;
            return 0;
        }
        return cli_parse_count(ctx, "replica count", val, INT_MAX,
                               &g->wait_replicas);
    case CLI_ID_WAIT_REPLICAS_TIMEOUT:
        return cli_parse_timeout(ctx, "replica wait", val,
                                 &g->wait_replicas_timeout_ms);
    case CLI_ID_WAIT_REPLICAS_LENIENT:
        g->wait_replicas_lenient = 1;
        return 0;
    case CLI_ID_WAIT_AOF_LOCAL:
        g->wait_aof_local = 1;
        return 0;
    case CLI_ID_WAIT_AOF_REPLICAS:
        return cli_parse_count(ctx, "append-only file replica count", val,
                               INT_MAX, &g->wait_aof_replicas);
    case CLI_ID_STRICT:
        g->strict = 1;
        return 0;
    }
    return CLI_CONTINUE;
}

/* The guards' timeout and leniency shape a guard: one must be asked for. */
static int check_guards(const char *ctx, const cli_global *g)
{
    if ((g->wait_replicas_timeout_ms > 0 || g->wait_replicas_lenient) &&
        g->wait_replicas == 0 && !g->wait_aof_local &&
        g->wait_aof_replicas == 0)
        return cli_usage(ctx, "--wait-replicas-timeout and "
                              "--wait-replicas-lenient go with "
                              "--wait-replicas, --wait-aof-local or "
                              "--wait-aof-replicas");
    return 0;
}

static int check_operands(const char *ctx, int have, char **ops, int min_ops,
                          int max_ops, const char *const *names)
{
    char q[CLI_QUOTE_MAX];

    if (have < min_ops)
        return cli_usage(ctx, "missing %s", names[have]);
    if (max_ops >= 0 && have > max_ops)
        return cli_usage(ctx, "unexpected argument '%s'",
                         cli_quote(ops[max_ops], q, sizeof q));
    return CLI_CONTINUE;
}

static int parse_retry(const char *ctx, const char *val,
                       redislock_acquire_options *acq)
{
    static const struct {
        const char *name;
        redislock_retry retry;
    } kinds[] = {
        {"constant", REDISLOCK_RETRY_CONSTANT},
        {"linear", REDISLOCK_RETRY_LINEAR},
        {"exponential", REDISLOCK_RETRY_EXPONENTIAL},
    };
    char q[CLI_QUOTE_MAX];
    size_t i;

    for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(val, kinds[i].name) == 0) {
            acq->retry = kinds[i].retry;
            return 0;
        }
    return cli_usage(ctx,
                     "invalid retry strategy '%s': use constant, linear "
                     "or exponential",
                     cli_quote(val, q, sizeof q));
}

/* The options that shape the wait for a held lock. */
static int apply_wait_option(const char *ctx, int id, const char *val,
                             redislock_acquire_options *acq)
{
    switch (id) {
    case 'w':
        return cli_parse_wait(ctx, val, &acq->wait_ms);
    case 'n':
        acq->wait_ms = REDISLOCK_NO_WAIT;
        return 0;
    case CLI_ID_FAIL_FAST:
        acq->fail_fast = 1;
        return 0;
    case CLI_ID_FAIR:
        acq->fair = 1;
        return 0;
    case 's':
        acq->shared = 1;
        return 0;
    case 'x':
        /* flock(1)'s spelling of the default. With -s too, the last
         * given wins, as flock -s -x takes an exclusive lock. */
        acq->shared = 0;
        return 0;
    case CLI_ID_LIMIT:
        return cli_parse_count(ctx, "limit", val, REDISLOCK_LIMIT_MAX,
                               &acq->limit);
    case CLI_ID_RETRY:
        return parse_retry(ctx, val, acq);
    case CLI_ID_RETRY_DELAY:
        return cli_parse_delay(ctx, "retry delay", val, &acq->retry_delay_ms);
    case CLI_ID_RETRY_MAX_DELAY:
        return cli_parse_delay(ctx, "maximum retry delay", val,
                               &acq->retry_max_delay_ms);
    case CLI_ID_MAX_ATTEMPTS:
        return cli_parse_count(ctx, "attempt count", val, INT_MAX,
                               &acq->max_attempts);
    }
    return CLI_EXIT_SOFTWARE;
}

static int apply_option(const char *ctx, int id, const char *val,
                        cli_cmdopts *o)
{
    int rc = cli_global_option(ctx, &o->g, id, val);

    if (rc == CLI_CONTINUE)
        rc = apply_guard_option(ctx, id, val, &o->g);
    if (rc != CLI_CONTINUE)
        return rc;
    switch (id) {
    case 't':
        return cli_parse_ttl(ctx, val, &o->acq.ttl_ms);
    case 'E':
        return cli_parse_code(ctx, val, &o->conflict_code);
    case CLI_ID_JSON:
        o->json = 1;
        return 0;
    case CLI_ID_VERBOSE:
        o->verbose = 1;
        return 0;
    case CLI_ID_ALL:
        o->all = 1;
        return 0;
    case CLI_ID_CLOCK:
        if (cli_parse_span(ctx, "clock check", val, &o->clock_ms) != 0)
            return CLI_EXIT_USAGE;
        if (o->clock_ms > 60000)
            return cli_usage(ctx, "--clock %s: at most 60s", val);
        return 0;
    case CLI_ID_OWNER:
        /* An owner id names a reentrant lock: each acquire with it
         * adds a hold, each release drops one. */
        o->acq.owner = val;
        o->acq.reentrant = 1;
        return cli_check_token(ctx, "owner id", val);
    case CLI_ID_METADATA:
        o->acq.metadata = val;
        return 0;
    case 'k':
        if (o->nkeys + 1 >= REDISLOCK_SET_MAX)
            return cli_usage(ctx,
                             "a set has at most %d keys: KEY and %d "
                             "-k/--key",
                             REDISLOCK_SET_MAX, REDISLOCK_SET_MAX - 1);
        o->keys[o->nkeys++] = val;
        return 0;
    case CLI_ID_HOLD_AFTER:
        return cli_parse_hold(ctx, val, &o->hold_after_ms);
    case CLI_ID_LOCK_DELAY:
        if (cli_parse_span(ctx, "lock-delay", val, &o->acq.lock_delay_ms) != 0)
            return CLI_EXIT_USAGE;
        if (o->acq.lock_delay_ms > REDISLOCK_LOCK_DELAY_MAX_MS)
            return cli_usage(ctx, "--lock-delay %s: at most 60s", val);
        return 0;
    case 'c':
        o->command = val;
        return 0;
    case CLI_ID_REASON:
        o->reason = val;
        return 0;
    case CLI_ID_SEQUENCER:
        o->sequencer = 1;
        return 0;
    case CLI_ID_VALUE:
        o->value = val;
        return cli_check_value(ctx, val);
    case CLI_ID_WATCH:
        o->watch = 1;
        return 0;
    }
    return apply_wait_option(ctx, id, val, &o->acq);
}

int cli_check_shared(const char *ctx, const cli_cmdopts *o)
{
    const redislock_acquire_options *acq = &o->acq;

    if (o->sequencer && acq->limit > 0)
        return cli_usage(ctx, "--sequencer is for an exclusive lock, not a "
                              "semaphore's permit (--limit)");
    if (!acq->shared)
        return 0;
    /* The library refuses these too, but only once connected; here the
     * message can name the option rather than the field. */
    if (acq->limit > 0)
        return cli_usage(ctx, "-s/--shared and --limit exclude each other: "
                              "a key is a shared lock or a semaphore");
    if (acq->owner != NULL)
        return cli_usage(ctx, "-s/--shared does not take --owner: a share "
                              "is not reentrant and has a token of its own");
    if (acq->metadata != NULL)
        return cli_usage(ctx, "-s/--shared does not take --metadata: a "
                              "share stores none");
    if (o->hold_after_ms > 0)
        return cli_usage(ctx, "--hold-after is for an exclusive lock, not "
                              "a share (-s/--shared)");
    if (acq->lock_delay_ms > 0)
        return cli_usage(ctx, "--lock-delay is for an exclusive lock, not "
                              "a share (-s/--shared)");
    if (o->sequencer)
        return cli_usage(ctx, "--sequencer is for an exclusive lock, not "
                              "a share (-s/--shared)");
    return 0;
}

int cli_check_set(const char *ctx, const cli_cmdopts *o)
{
    const redislock_acquire_options *acq = &o->acq;
    int i, rc;

    if (o->nkeys == 0)
        return 0;
    if (acq->limit > 0 || acq->shared || acq->owner != NULL ||
        acq->metadata != NULL || acq->fair || o->hold_after_ms > 0 ||
        acq->lock_delay_ms > 0 || o->sequencer)
        return cli_usage(ctx,
                         "-k/--key takes a set of keys as one plain lock: "
                         "not with %s",
                         acq->limit > 0          ? "--limit"
                         : acq->shared           ? "-s/--shared"
                         : acq->owner != NULL    ? "--owner"
                         : acq->metadata != NULL ? "--metadata"
                         : acq->fair             ? "--fair"
                         : o->hold_after_ms > 0  ? "--hold-after"
                         : o->sequencer          ? "--sequencer"
                                                 : "--lock-delay");
    for (i = 0; i < o->nkeys; i++)
        if ((rc = cli_check_key(ctx, o->keys[i])) != 0)
            return rc;
    return 0;
}

int cli_cmd_options(int argc, char **argv, const cli_global *g,
                    const cli_optdef *defs, int min_ops, int max_ops,
                    const char *const *names, cli_cmdopts *o)
{
    cli_args a = {argc, argv, 1, 0, argv[0]};
    const char *val;
    int id, rc;

    memset(o, 0, sizeof *o);
    o->g = *g;
    o->acq.ttl_ms = REDISLOCK_DEFAULT_TTL_MS;
    o->acq.wait_ms = REDISLOCK_WAIT_FOREVER;
    o->conflict_code = CLI_EXIT_NOT_OBTAINED;
    o->clock_ms = 1000;
    while ((id = cli_getopt(&a, defs, &val)) > 0) {
        if (id == 'h') {
            cli_print_command_help(argv[0]);
            return CLI_EXIT_OK;
        }
        if ((rc = cli_note_option(argv[0], &o->g, defs, id)) != 0 ||
            (rc = apply_option(argv[0], id, val, o)) != 0)
            return rc;
    }
    if (id < 0)
        return CLI_EXIT_USAGE;
    if ((rc = check_guards(argv[0], &o->g)) != 0)
        return rc;
    o->ev.ctx = argv[0];
    o->ev.verbose = o->verbose;
    o->operand = a.i;
    return check_operands(argv[0], argc - a.i, argv + a.i, min_ops, max_ops,
                          names);
}
