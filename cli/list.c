/* redislock list: the locks held now, on every server; with --all, the
 * other keys that match too. */
#include "cli.h"

#include <stdio.h>

typedef struct list_state {
    int json;
    long n; /* locks printed */
} list_state;

static int print_one(const redislock_info *info, void *arg)
{
    list_state *st = arg;

    if (st->json)
        fputs(st->n == 0 ? "[\n" : ",\n", stdout);
    cli_print_lock(info->key, info->keylen, info, st->json, 1);
    st->n++;
    /* A reader that went away (list | head) ends the listing: the rest
     * would only be thrown away. */
    return ferror(stdout) ? 1 : 0;
}

int cli_cmd_list(int argc, char **argv, const cli_global *g)
{
    static const cli_optdef defs[] = {
        CLI_OPTS_COMMON,
        {CLI_ID_JSON, "json", 0},
        {CLI_ID_ALL, "all", 0},
        {0, NULL, 0},
    };
    static const char *const names[] = {"PATTERN"};
    const char *ctx = argv[0], *pattern = NULL;
    redislock_client *c;
    list_state st = {0, 0};
    cli_cmdopts o;
    redislock_err err;
    int rc;

    rc = cli_cmd_options(argc, argv, g, defs, 0, 1, names, &o);
    if (rc != CLI_CONTINUE)
        return rc;
    if (o.operand < argc) {
        pattern = argv[o.operand];
        if (*pattern == '\0')
            return cli_usage(ctx, "the pattern is empty");
    }
    if ((rc = cli_connect(ctx, &o.g, 0, NULL, &c)) != 0)
        return rc;
    st.json = o.json;
    /* --all: every matching key, those that are not locks marked so. */
    err = redislock_list_flags(c, pattern, o.all ? REDISLOCK_LIST_ALL : 0,
                               print_one, &st);
    if (err != REDISLOCK_OK)
        rc = cli_fail(ctx, err, "cannot list the locks");
    else if (st.json)
        fputs(st.n == 0 ? "[]\n" : "\n]\n", stdout);
    redislock_client_free(c);
    return rc;
}
