/* Connecting: the Redis URLs, the client and the lock handle. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *env_url(void)
{
    static const char *const vars[] = {"REDISLOCK_URL", "REDIS_URL"};
    size_t i;

    /* An empty variable counts as unset, as shells make that easy. */
    for (i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v != NULL && *v != '\0')
            return v;
    }
    return "redis://127.0.0.1:6379";
}

/* Copies url for a message with its password, if any, replaced by "***". */
static const char *redact_url(const char *url, char *buf, size_t size)
{
    char tmp[CLI_QUOTE_MAX];
    const char *auth = strstr(url, "://");
    const char *end, *at = NULL, *keep, *p;

    if (auth == NULL)
        return cli_quote(url, buf, size);
    auth += 3;
    end = auth + strcspn(auth, "/?#");
    for (p = auth; p < end; p++)
        if (*p == '@')
            at = p;
    if (at == NULL)
        return cli_quote(url, buf, size);
    /* "user:secret@" keeps the user; a lone "secret@" may be a password
     * too, so all of it goes. */
    keep = memchr(auth, ':', (size_t)(at - auth));
    keep = keep != NULL ? keep + 1 : auth;
    snprintf(tmp, sizeof tmp, "%.*s***%s", (int)(keep - url), url, at);
    return cli_quote(tmp, buf, size);
}

static int fail_url(const char *ctx, redislock_err err, const char *url)
{
    char shown[CLI_QUOTE_MAX], what[CLI_QUOTE_MAX + 32];
    char detail[CLI_DETAIL_MAX];

    redact_url(url, shown, sizeof shown);
    if (err == REDISLOCK_EINVAL) {
        /* "invalid argument" says less than the detail alone. */
        cli_detail(detail, sizeof detail);
        cli_err(ctx, "invalid Redis URL '%s': %s", shown,
                detail[0] != '\0' ? detail : redislock_strerror(err));
        return CLI_EXIT_USAGE;
    }
    snprintf(what, sizeof what, "Redis %s '%s'",
             err == REDISLOCK_ENOTLS ? "URL" : "at", shown);
    return cli_fail(ctx, err, what);
}

/* A sharded client failed: the library's detail names the server (or the
 * problem with the list), so the URLs are not repeated. */
static int fail_shards(const char *ctx, redislock_err err)
{
    char detail[CLI_DETAIL_MAX];

    if (err == REDISLOCK_EINVAL) {
        cli_detail(detail, sizeof detail);
        cli_err(ctx, "invalid Redis URLs for --shard: %s",
                detail[0] != '\0' ? detail : redislock_strerror(err));
        return CLI_EXIT_USAGE;
    }
    return cli_fail(ctx, err, "Redis shards");
}

/* Usage errors in the URL list and the prefix, found before connecting. */
static int check_global(const char *ctx, const cli_global *g)
{
    char q[CLI_QUOTE_MAX];
    size_t i, j;

    if (g->nurls > 1 && !g->shard)
        return cli_usage(ctx, "several Redis URLs need --shard (Redlock "
                              "quorums and Redis Cluster are not supported "
                              "yet)");
    for (i = 0; i < g->nurls; i++) {
        if (*g->urls[i] == '\0')
            return cli_usage(ctx, "the Redis URL is empty");
        for (j = 0; j < i; j++)
            if (strcmp(g->urls[i], g->urls[j]) == 0)
                return cli_usage(ctx, "Redis URL '%s' is given twice",
                                 redact_url(g->urls[i], q, sizeof q));
    }
    if (g->prefix == NULL)
        return 0;
    if (strlen(g->prefix) > REDISLOCK_KEY_MAX)
        return cli_usage(ctx, "the prefix is longer than %d bytes",
                         REDISLOCK_KEY_MAX);
    /* Part of every key, so held to the keys' rule. */
    for (i = 0; g->prefix[i] != '\0'; i++)
        if ((unsigned char)g->prefix[i] < 0x20 || g->prefix[i] == 0x7f)
            return cli_usage(ctx, "the prefix contains a control character");
    return 0;
}

int cli_connect(const char *ctx, const cli_global *g, int64_t timeout_ms,
                redislock_client **c)
{
    redislock_options o;
    const char *url = g->nurls > 0 ? g->urls[0] : env_url();
    redislock_err err;
    int rc;

    *c = NULL;
    if ((rc = check_global(ctx, g)) != 0)
        return rc;
    memset(&o, 0, sizeof o);
    o.connect_timeout_ms = timeout_ms > 0 ? timeout_ms : 0;
    o.command_timeout_ms = timeout_ms > 0 ? timeout_ms : 0;
    /* One connection per server is all a single-threaded tool uses. */
    o.max_connections = 1;
    o.prefix = g->prefix;
    if (!g->shard) {
        err = redislock_client_new(c, url, &o);
        return err == REDISLOCK_OK ? 0 : fail_url(ctx, err, url);
    }
    if (g->nurls == 0)
        err = redislock_client_new_sharded(c, &url, 1, &o);
    else
        err = redislock_client_new_sharded(c, g->urls, g->nurls, &o);
    return err == REDISLOCK_OK ? 0 : fail_shards(ctx, err);
}

int cli_open(const char *ctx, const cli_global *g, const char *key,
             int64_t timeout_ms, redislock_client **c, redislock_lock **l)
{
    redislock_err err;
    int rc;

    *l = NULL;
    if ((rc = cli_connect(ctx, g, timeout_ms, c)) != 0)
        return rc;
    err = redislock_lock_new(*c, key, strlen(key), l);
    if (err != REDISLOCK_OK) {
        rc = cli_fail(ctx, err, "cannot make a lock handle");
        redislock_client_free(*c);
        *c = NULL;
        return rc;
    }
    return 0;
}

void cli_close(redislock_client *c, redislock_lock *l)
{
    redislock_lock_free(l);
    redislock_client_free(c);
}

void cli_signal_set(sigset_t *set)
{
    static const int sigs[] = {SIGHUP,  SIGINT,  SIGQUIT,
                               SIGTERM, SIGUSR1, SIGUSR2};
    struct sigaction sa;
    size_t i;

    sigemptyset(set);
    for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        if (sigaction(sigs[i], NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
            continue;
        sigaddset(set, sigs[i]);
    }
}

int64_t cli_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
