#include "fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "util.h"

redislock_client *th_client_url_at_(const char *file, int line, const char *url,
                                    const redislock_options *opts)
{
    redislock_client *c = NULL;
    redislock_err e = redislock_client_new(&c, url, opts);

    if (e != REDISLOCK_OK || c == NULL)
        test_fail_(file, line, "redislock_client_new(\"%s\"): %s; %s", url,
                   redislock_errname(e), redislock_errdetail());
    return c;
}

redislock_lock *th_lock_at_(const char *file, int line, redislock_client *c,
                            const char *key)
{
    redislock_lock *l = NULL;
    redislock_err e = redislock_lock_new(c, key, strlen(key), &l);

    if (e != REDISLOCK_OK || l == NULL)
        test_fail_(file, line, "redislock_lock_new(\"%s\"): %s; %s", key,
                   redislock_errname(e), redislock_errdetail());
    return l;
}

redislock_acquire_options th_aopts(int64_t ttl_ms, int64_t wait_ms,
                                   int64_t retry_delay_ms)
{
    redislock_acquire_options o = {0};

    o.ttl_ms = ttl_ms;
    o.wait_ms = wait_ms;
    o.retry_delay_ms = retry_delay_ms;
    return o;
}

void th_assert_key_at_(const char *file, int line, redisContext *c,
                       const char *key, const char *value)
{
    char *got = th_cmd_str_at_(file, line, c, NULL, "GET %s", key);

    if (got == NULL ? value != NULL : value == NULL || strcmp(got, value))
        test_fail_(file, line, "key %s holds %s%s%s, want %s%s%s", key,
                   got ? "\"" : "", got ? got : "(nil)", got ? "\"" : "",
                   value ? "\"" : "", value ? value : "(nil)",
                   value ? "\"" : "");
    free(got);
}

void th_assert_token_at_(const char *file, int line, const char *t,
                         const char *prefix)
{
    size_t i, n = strlen(prefix);
    const char *h = t;

    if (t == NULL)
        test_fail_(file, line, "token is NULL");
    if (strncmp(t, prefix, n) == 0)
        h = t + n;
    for (i = 0; h[i] != '\0'; i++)
        if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f')))
            break;
    if (h == t + n && i == 32 && h[i] == '\0')
        return;
    test_fail_(file, line, "\"%s\" is not \"%s\" and 32 lowercase hex digits",
               t, prefix);
}

long long th_listening(redisContext *c, const char *pattern)
{
    redisReply *r = th_cmd(c, "PUBSUB CHANNELS %s", pattern);
    long long n;

    ASSERT(r->type == REDIS_REPLY_ARRAY);
    n = (long long)r->elements;
    freeReplyObject(r);
    return n;
}

long long th_lock_keys(redisContext *c)
{
    char cursor[32] = "0";
    long long n = 0;
    size_t i;

    do {
        redisReply *r = th_cmd(c, "SCAN %s COUNT 1000", cursor);
        ASSERT(r->type == REDIS_REPLY_ARRAY && r->elements == 2);
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        for (i = 0; i < r->element[1]->elements; i++) {
            const redisReply *k = r->element[1]->element[i];
            if (memmem(k->str, (size_t)k->len, ":rl-", 4) == NULL)
                n++;
        }
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    return n;
}

th_env th_env_start(void)
{
    th_env e;

    e.s = th_server_start(NULL);
    e.r = th_server_redis(e.s);
    e.c = th_client(e.s);
    return e;
}

void th_env_stop(th_env *e)
{
    redislock_client_free(e->c);
    redisFree(e->r);
    th_server_stop(e->s);
}

th_servers th_servers_start(int n)
{
    th_servers e;
    int i;

    memset(&e, 0, sizeof e);
    ASSERT_LE(n, TH_SERVERS_MAX);
    e.n = n;
    for (i = 0; i < n; i++) {
        e.s[i] = th_server_start(NULL);
        e.r[i] = th_server_redis(e.s[i]);
        e.urls[i] = e.s[i]->unix_url;
    }
    return e;
}

void th_servers_kill(th_servers *e, int i)
{
    redisFree(e->r[i]);
    e->r[i] = NULL;
    th_server_kill(e->s[i]);
}

void th_servers_stop(th_servers *e)
{
    int i;

    for (i = 0; i < e->n; i++) {
        if (e->r[i] != NULL)
            redisFree(e->r[i]);
        th_server_stop(e->s[i]);
    }
}

static void *waiter_thread(void *arg)
{
    th_waiter *w = arg;

    w->err = redislock_acquire(w->l, &w->o);
    w->done_us = th_now_us();
    snprintf(w->detail, sizeof w->detail, "%s", redislock_errdetail());
    if (w->err == REDISLOCK_OK)
        snprintf(w->token, sizeof w->token, "%s", redislock_token(w->l));
    return NULL;
}

void th_waiter_start_at_(const char *file, int line, th_waiter *w,
                         redislock_client *c, const char *key,
                         const redislock_acquire_options *o)
{
    memset(w, 0, sizeof *w);
    w->l = th_lock_at_(file, line, c, key);
    w->o = *o;
    if (pthread_create(&w->t, NULL, waiter_thread, w) != 0)
        test_fail_(file, line, "cannot start a waiter thread");
}

void th_waiter_join_ok_at_(const char *file, int line, th_waiter *w, int64_t ms)
{
    th_join_within_at_(file, line, w->t, ms);
    if (w->err != REDISLOCK_OK)
        test_fail_(file, line, "waiter: %s; %s", redislock_errname(w->err),
                   w->detail);
}

long long th_info_field_at_(const char *file, int line, redisContext *r,
                            const char *section, const char *field)
{
    redisReply *rep = th_cmd_at_(file, line, 0, r, "INFO %s", section);
    char pat[64];
    const char *p;
    long long v;

    snprintf(pat, sizeof pat, "\n%s:", field);
    p = strstr(rep->str, pat);
    if (p == NULL)
        test_fail_(file, line, "INFO %s has no %s", section, field);
    v = strtoll(p + strlen(pat), NULL, 10);
    freeReplyObject(rep);
    return v;
}

void th_wait_blocked_at_(const char *file, int line, redisContext *r,
                         long long n, int64_t ms)
{
    int64_t deadline = th_now_ms() + ms;
    long long got;

    while ((got = th_info_field_at_(file, line, r, "clients",
                                    "blocked_clients")) != n &&
           th_now_ms() < deadline)
        th_sleep_ms(2);
    if (got != n)
        test_fail_(file, line, "%lld clients blocked after %lld ms, want %lld",
                   got, (long long)ms, n);
}
