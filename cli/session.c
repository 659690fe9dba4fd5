#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The slice of one acquire call while waiting, so that a pending signal
 * is noticed within this time even when waiting forever. */
#define CLI_ACQUIRE_SLICE_MS 200

static const char *pick_url(const cli_global *g)
{
    static const char *const vars[] = {"REDISLOCK_URL", "REDIS_URL"};
    size_t i;

    if (g->url != NULL)
        return g->url;
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

int cli_open(const char *ctx, const cli_global *g, const char *key,
             int64_t timeout_ms, redislock_client **c, redislock_lock **l)
{
    redislock_options o;
    const char *url = pick_url(g);
    redislock_err err;
    int rc;

    *c = NULL;
    *l = NULL;
    if (*url == '\0')
        return cli_usage(ctx, "the Redis URL is empty");
    memset(&o, 0, sizeof o);
    o.connect_timeout_ms = timeout_ms > 0 ? timeout_ms : 0;
    o.command_timeout_ms = timeout_ms > 0 ? timeout_ms : 0;
    /* One connection is all a single-threaded tool ever uses. */
    o.max_connections = 1;
    err = redislock_client_new(c, url, &o);
    if (err != REDISLOCK_OK)
        return fail_url(ctx, err, url);
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

/* Takes one pending signal of set (blocked by the caller), or returns 0. */
static int take_signal(const sigset_t *set)
{
    struct timespec zero = {0, 0};
    int sig;

    if (set == NULL)
        return 0;
    sig = sigtimedwait(set, NULL, &zero);
    return sig > 0 ? sig : 0;
}

redislock_err cli_acquire(redislock_lock *l, int64_t ttl_ms, int64_t wait_ms,
                          const sigset_t *stop, int *sig, int64_t *start_ms)
{
    redislock_acquire_options o;
    redislock_err err;
    int64_t now = cli_now_ms();
    /* A wait past any plausible lifetime is a wait forever; this also keeps
     * the sum below from overflowing. */
    int64_t deadline =
        wait_ms < 0 || wait_ms > INT64_MAX / 4 ? -1 : now + wait_ms;

    *sig = 0;
    for (;;) {
        memset(&o, 0, sizeof o);
        o.ttl_ms = ttl_ms;
        o.wait_ms = CLI_ACQUIRE_SLICE_MS;
        if (deadline >= 0 && deadline - now < o.wait_ms)
            o.wait_ms = deadline > now ? deadline - now : REDISLOCK_NO_WAIT;
        *start_ms = now;
        err = redislock_acquire(l, &o);
        *sig = take_signal(stop);
        if (*sig != 0) {
            /* Best effort: if this fails the lease ends by its TTL. */
            if (err == REDISLOCK_OK)
                (void)redislock_release(l);
            return REDISLOCK_EHELD;
        }
        now = cli_now_ms();
        if (err != REDISLOCK_EHELD || (deadline >= 0 && now >= deadline))
            return err;
    }
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
