/* redislock doctor: each server's configuration read for what loses
 * locks silently (redislock_doctor), one finding and its fix at a time. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>

/* The most findings printed: more than a client's servers can give. */
#define CLI_FINDINGS_MAX 256

int cli_cmd_doctor(int argc, char **argv, const cli_global *g)
{
    static const cli_optdef defs[] = {
        CLI_OPTS_COMMON,
        CLI_OPTS_GUARDS,
        {CLI_ID_JSON, "json", 0},
        {CLI_ID_CLOCK, "clock", 1},
        {0, NULL, 0},
    };
    const char *ctx = argv[0];
    redislock_finding *f;
    redislock_client *c;
    cli_cmdopts o;
    redislock_err err;
    size_t n = 0, i, shown;
    int rc, unsafe = 0, unanswered = 0;

    rc = cli_cmd_options(argc, argv, g, defs, 0, 0, NULL, &o);
    if (rc != CLI_CONTINUE)
        return rc;
    /* The doctor reads; --strict would refuse what it is to report. */
    o.g.strict = 0;
    if ((f = calloc(CLI_FINDINGS_MAX, sizeof *f)) == NULL)
        return cli_fail(ctx, REDISLOCK_ENOMEM, "the findings");
    if ((rc = cli_connect(ctx, &o.g, 0, NULL, &c)) != 0) {
        free(f);
        return rc;
    }
    err = redislock_doctor(c, o.clock_ms, f, CLI_FINDINGS_MAX, &n);
    if (err != REDISLOCK_OK) {
        rc = cli_fail(ctx, err, "cannot examine the servers");
        n = 0;
    }
    shown = n < CLI_FINDINGS_MAX ? n : CLI_FINDINGS_MAX;
    if (o.json && err == REDISLOCK_OK)
        fputs(shown == 0 ? "[]\n" : "[\n", stdout);
    for (i = 0; i < shown; i++) {
        if (f[i].risk == REDISLOCK_RISK_UNANSWERED)
            unanswered = 1;
        else
            unsafe = 1;
        cli_print_finding(&f[i], o.json);
        fputs(o.json ? (i + 1 < shown ? ",\n" : "\n]\n") : "", stdout);
    }
    if (!o.json && err == REDISLOCK_OK && n == 0)
        puts("no findings: nothing in these servers' configuration loses "
             "locks silently");
    redislock_client_free(c);
    free(f);
    if (err != REDISLOCK_OK)
        return rc;
    /* Findings are the servers' configuration: EX_CONFIG; a server that
     * did not answer, and nothing else, is EX_UNAVAILABLE. */
    return unsafe       ? CLI_EXIT_CONFIG
           : unanswered ? CLI_EXIT_UNAVAILABLE
                        : CLI_EXIT_OK;
}
