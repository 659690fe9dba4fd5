/*
 * Sets of keys over several servers (agroup.c): on a sharded client the
 * keys of one server are taken by one script, and the groups of several
 * servers one after another; a refusal by any group leaves nothing held
 * on any server, and the waiter blocks, silent, on the refusing key's
 * server until its release; the fencing token is above every earlier
 * token of each key and every later one, even when one server's counter
 * runs far ahead of the others'; a lost reply from a later group leaves
 * the earlier groups free at once and its own ghost undone. The
 * model-based run over several servers is in test_set_model.c, the
 * cluster's cross-slot sets in test_cluster.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/fixture.h"
#include "harness/keysets.h"
#include "harness/proxy.h"
#include "harness/server.h"
#include "harness/util.h"
#include "script.h"
#include "test.h"

/* A set of keys on one server: taken there by one script, whole. */
static void set_on_one(th_servers *e, redislock_client *c, const char *const *k,
                       int at)
{
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_lock *s = th_lock_set(c, k, 3);
    int i;

    ASSERT_OK(redislock_acquire(s, &o));
    for (i = 0; i < e->n; i++)
        ASSERT_EQ_INT(th_keys_existing(e->r[i], k, 3), i == at ? 3 : 0);
    ASSERT_EQ_INT(th_keys_holding(e->r[at], k, 3, redislock_token(s)), 3);
    ASSERT_EQ_INT(th_fence_counter(e->r[at], k[2]), redislock_fence(s));
    ASSERT_OK(redislock_release(s));
    ASSERT_EQ_INT(th_keys_existing(e->r[at], k, 3), 0);
    redislock_lock_free(s);
}

/* A set waiting behind key held, which lives on server at: blocked there,
 * silent on every server, holding nothing anywhere; woken by the
 * release, well before the 30 s lease would end. Returns the
 * release-to-return time in us. */
static int64_t woken_behind(th_servers *e, redislock_client *c,
                            const char *const *k, int n, const char *held,
                            int at)
{
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    redislock_acquire_options wo = th_aopts(30000, 10000, 0);
    redislock_lock *h = th_lock(c, held), *s = th_lock_set(c, k, (size_t)n);
    th_waiter w;
    int64_t t0;
    int i;

    ASSERT_OK(redislock_acquire(h, &o));
    th_waiter_start_lock(&w, s, &wo);
    th_wait_blocked(e->r[at], 1, 2000);
    for (i = 0; i < e->n; i++)
        if (i != at)
            ASSERT_EQ_INT(th_blocked_clients(e->r[i]), 0);
    th_assert_silent(e->r[at], 500);
    for (i = 0; i < e->n; i++)
        th_assert_silent(e->r[i], 300);
    ASSERT_EQ_INT(th_lock_keys_anywhere(e), 1);
    t0 = th_now_us();
    ASSERT_OK(redislock_release(h));
    th_waiter_join_ok(&w, 3000);
    ASSERT_EQ_INT(th_held_anywhere(e, k, (size_t)n, redislock_token(s)), n);
    ASSERT_OK(redislock_release(s));
    ASSERT_EQ_INT(th_lock_keys_anywhere(e), 0);
    redislock_lock_free(h);
    redislock_lock_free(s);
    return w.done_us - t0;
}

/*
 * A sharded client of three servers: a set whose keys land on one server
 * is taken there by one script; a set over three servers holds each key
 * on its own server with one token, one fencing token (each key's
 * counter) and one lease (its TTL the shortest), is extended and released
 * everywhere; a key held on any server makes the set take nothing
 * anywhere, and the set then waits behind that key, on that server.
 */
void test_spread_sharded_sets(void)
{
    th_servers e = th_servers_start(3);
    redislock_client *c = NULL;
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_lock *s, *h;
    char keys[3][3][24];
    const char *one[3], *all[4];
    int got[3], i;
    int64_t ttl, first, last;

    ASSERT_OK(redislock_client_new_sharded(&c, e.urls, 3, NULL));
    th_keys_by_server(e.r, 3, c, "sp", keys, got);
    for (i = 0; i < 3; i++)
        one[i] = keys[1][i];
    set_on_one(&e, c, one, 1);
    /* Two keys of server 2, one of server 0, one of server 1, mixed. */
    all[0] = keys[2][0];
    all[1] = keys[0][0];
    all[2] = keys[2][1];
    all[3] = keys[1][0];
    test_log("set %s %s %s %s on servers 2 0 2 1", all[0], all[1], all[2],
             all[3]);
    s = th_lock_set(c, all, 4);
    ASSERT_OK(redislock_acquire(s, &o));
    ASSERT_EQ_INT(th_held_anywhere(&e, all, 4, redislock_token(s)), 4);
    ASSERT_EQ_INT(th_keys_holding(e.r[2], all, 4, redislock_token(s)), 2);
    ASSERT_EQ_INT(th_fence_counter(e.r[2], all[0]), redislock_fence(s));
    ASSERT_EQ_INT(th_fence_counter(e.r[0], all[1]), redislock_fence(s));
    ASSERT_EQ_INT(th_fence_counter(e.r[2], all[2]), redislock_fence(s));
    ASSERT_EQ_INT(th_fence_counter(e.r[1], all[3]), redislock_fence(s));
    /* The TTL is the shortest key's: shorten one by hand. */
    th_cmd_int(e.r[1], "PEXPIRE %s 4000", all[3]);
    ASSERT_OK(redislock_ttl(s, &ttl));
    ASSERT(ttl > 3000 && ttl <= 4000);
    ASSERT_OK(redislock_extend(s, 20000));
    ASSERT_GT(th_pttl(e.r[2], all[0]), 15000);
    ASSERT_GT(th_pttl(e.r[0], all[1]), 15000);
    ASSERT_GT(th_pttl(e.r[2], all[2]), 15000);
    ASSERT_GT(th_pttl(e.r[1], all[3]), 15000);
    ASSERT_OK(redislock_release(s));
    ASSERT_EQ_INT(th_lock_keys_anywhere(&e), 0);
    /* Held on the last server in the set's order, then on the first. */
    h = th_lock(c, all[0]);
    ASSERT_OK(redislock_acquire(h, &o));
    ASSERT_ERR(redislock_acquire(s, &o), REDISLOCK_EHELD);
    test_log("refused: %s", redislock_errdetail());
    ASSERT_EQ_INT(th_lock_keys_anywhere(&e), 1);
    ASSERT_OK(redislock_release(h));
    redislock_lock_free(h);
    h = th_lock(c, all[1]);
    ASSERT_OK(redislock_acquire(h, &o));
    ASSERT_ERR(redislock_acquire(s, &o), REDISLOCK_EHELD);
    ASSERT_EQ_INT(th_lock_keys_anywhere(&e), 1);
    ASSERT_OK(redislock_release(h));
    redislock_lock_free(h);
    redislock_lock_free(s);
    last = woken_behind(&e, c, all, 4, all[0], 2);
    first = woken_behind(&e, c, all, 4, all[1], 0);
    test_log("release to the set's return: %lld us behind the last "
             "server's key, %lld us behind the first's (lease 30 s)",
             (long long)last, (long long)first);
    ASSERT_LT(last, 1000000);
    ASSERT_LT(first, 1000000);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/*
 * One fencing token for a set over two servers even when one server's
 * counter runs far ahead of the other's (a clock that is ahead, or a
 * counter raised by an earlier set): the set's token is past both
 * counters, each key's counter then holds it, and one that was raised
 * lives for as long as its lead on its server's clock, so the next lock
 * of that key, alone, gets a token past the set's. Either server may be
 * the one ahead.
 */
static void fence_ahead(th_servers *e, redislock_client *c, const char *lo,
                        const char *hi, int ahead)
{
    const char *k[2] = {lo, hi};
    const char *key = k[ahead];
    redislock_acquire_options o = th_aopts(2000, 0, 0);
    redislock_lock *s = th_lock_set(c, k, 2), *one;
    long long seeded;
    int64_t f;
    char name[64];
    redisReply *t = th_cmd(e->r[ahead], "TIME");

    /* 10 minutes ahead of that server's clock. */
    seeded = atoll(t->element[0]->str) * 1000000 + atoll(t->element[1]->str) +
             600LL * 1000000;
    freeReplyObject(t);
    th_fence_counter_name(key, name, sizeof name);
    freeReplyObject(th_cmd(e->r[ahead], "SET %s %lld PX 700000", name, seeded));
    ASSERT_OK(redislock_acquire(s, &o));
    f = redislock_fence(s);
    test_log("counter of %s (server %d) 10 min ahead: the set's fence %lld, "
             "%lld past it",
             key, ahead, (long long)f, (long long)(f - seeded));
    ASSERT_GT(f, seeded);
    ASSERT_EQ_INT(th_fence_counter(e->r[0], lo), f);
    ASSERT_EQ_INT(th_fence_counter(e->r[1], hi), f);
    /* The other key's counter outlives the lead (600 s), not 3 s. */
    ASSERT_GT(th_fence_counter_pttl(e->r[1 - ahead], k[1 - ahead]), 590000);
    ASSERT_OK(redislock_release(s));
    one = th_lock(c, k[1 - ahead]);
    ASSERT_OK(redislock_acquire(one, &o));
    ASSERT_GT(redislock_fence(one), f);
    ASSERT_OK(redislock_release(one));
    redislock_lock_free(one);
    redislock_lock_free(s);
}

void test_spread_fence_above_every_server(void)
{
    th_servers e = th_servers_start(2);
    redislock_client *c = NULL;
    char keys[2][3][24];
    int got[2];

    ASSERT_OK(redislock_client_new_sharded(&c, e.urls, 2, NULL));
    th_keys_by_server(e.r, 2, c, "sf", keys, got);
    /* Ahead on the second server (the set's last group), then on the
     * first. */
    fence_ahead(&e, c, keys[0][0], keys[1][0], 1);
    fence_ahead(&e, c, keys[0][1], keys[1][1], 0);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/*
 * A set over two servers whose second server's reply is lost (a proxy
 * holds it past the command timeout): the acquire fails with
 * REDISLOCK_ETIMEDOUT; the first server's key is free when it returns;
 * the request that reaches the second server late takes its key for at
 * most a moment before the janitor frees it; then both keys are free for
 * others and the set.
 */
void test_spread_lost_reply_undone(void)
{
    th_server *a = th_server_start(NULL), *b = th_server_start(NULL);
    th_proxy *p = th_proxy_start(b->port);
    redisContext *r[2] = {th_server_redis(a), th_server_redis(b)};
    redislock_options co = {0};
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_client *c;
    redislock_lock *s, *one;
    char keys[2][3][24], url[64];
    const char *urls[2] = {a->tcp_url, url}, *k[2];
    int got[2];
    int64_t t0, now, seen = -1, gone = -1, undelayed = -1;
    long long n0, n1;

    snprintf(url, sizeof url, "redis://127.0.0.1:%d", th_proxy_port(p));
    co.command_timeout_ms = 200;
    ASSERT_OK(redislock_client_new_sharded(&c, urls, 2, &co));
    th_keys_by_server(r, 2, c, "sl", keys, got);
    k[0] = keys[1][0];
    k[1] = keys[0][0];
    s = th_lock_set(c, k, 2);
    /* Once through, so that both servers have the scripts. */
    ASSERT_OK(redislock_acquire(s, &o));
    ASSERT_OK(redislock_release(s));
    th_proxy_set_delay(p, 1000);
    t0 = th_now_ms();
    ASSERT_ERR(redislock_acquire(s, &o), REDISLOCK_ETIMEDOUT);
    test_log("failed after %lld ms: %s", (long long)(th_now_ms() - t0),
             redislock_errdetail());
    ASSERT_EQ_INT(th_cmd_int(r[0], "EXISTS %s", k[1]), 0);
    while ((now = th_now_ms() - t0) < 3000 && gone < 0) {
        n0 = th_cmd_int(r[0], "EXISTS %s", k[1]);
        n1 = th_cmd_int(r[1], "EXISTS %s", k[0]);
        if (n0 != 0)
            test_fail_(__FILE__, __LINE__,
                       "the first server's key held "
                       "again at %lld ms",
                       (long long)now);
        if (n1 == 1 && seen < 0) {
            seen = now;
            th_proxy_set_delay(p, 0);
            undelayed = now;
        }
        if (n1 == 0 && seen >= 0)
            gone = now;
        th_sleep_ms(2);
    }
    test_log("ghost on the second server seen at %lld ms, gone at %lld ms "
             "(undelayed at %lld ms)",
             (long long)seen, (long long)gone, (long long)undelayed);
    ASSERT_GE(seen, 1000 - 50);
    ASSERT_GE(gone, 0);
    ASSERT_LE(gone - undelayed, 400);
    one = th_lock(c, k[0]);
    ASSERT_OK(redislock_acquire(one, &o));
    ASSERT_OK(redislock_release(one));
    ASSERT_OK(redislock_acquire(s, &o));
    ASSERT_OK(redislock_release(s));
    ASSERT_EQ_INT(th_lock_keys(r[0]) + th_lock_keys(r[1]), 0);
    redislock_lock_free(one);
    redislock_lock_free(s);
    redislock_client_free(c);
    th_proxy_stop(p);
    redisFree(r[0]);
    redisFree(r[1]);
    th_server_stop(a);
    th_server_stop(b);
}

/*
 * An extend that finds a set over two servers lost (its second server's
 * key gone, or another owner's) reports it and leaves nothing held: the
 * first server's key, which the extend had lengthened before it met the
 * loss, is released, not kept for the new TTL (a lost set holds nothing
 * past its old lease). The model-based run found this under load.
 */
void test_spread_lost_extend_holds_nothing(void)
{
    th_servers e = th_servers_start(2);
    redislock_client *c = NULL;
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    redislock_lock *s, *other;
    char keys[2][3][24];
    const char *k[2];
    int got[2];

    ASSERT_OK(redislock_client_new_sharded(&c, e.urls, 2, NULL));
    th_keys_by_server(e.r, 2, c, "sx", keys, got);
    k[0] = keys[0][0];
    k[1] = keys[1][0];
    s = th_lock_set(c, k, 2);
    /* The second key expired. */
    ASSERT_OK(redislock_acquire(s, &o));
    th_cmd_int(e.r[1], "DEL %s", k[1]);
    ASSERT_ERR(redislock_extend(s, 60000), REDISLOCK_EEXPIRED);
    ASSERT_KEY(e.r[0], k[0], NULL);
    /* The second key another owner's. */
    ASSERT_OK(redislock_acquire(s, &o));
    th_cmd_int(e.r[1], "DEL %s", k[1]);
    other = th_lock(c, k[1]);
    ASSERT_OK(redislock_acquire(other, &o));
    ASSERT_ERR(redislock_extend(s, 60000), REDISLOCK_ELOST);
    ASSERT_KEY(e.r[0], k[0], NULL);
    ASSERT_KEY(e.r[1], k[1], redislock_token(other));
    ASSERT_OK(redislock_release(other));
    redislock_lock_free(other);
    redislock_lock_free(s);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/* A sharded client of e's two servers (in *c), and a set of four keys
 * named from prefix, two on each server taken in turns (all; keys[i]
 * holds server i's); the set's first attempt's and release's scripts are
 * loaded on both, so that a SLOWLOG counts each one's runs once. */
static redislock_lock *four_over_two(th_servers *e, redislock_client **c,
                                     const char *prefix, char keys[2][3][24],
                                     const char *all[4])
{
    int got[2], i;

    ASSERT_OK(redislock_client_new_sharded(c, e->urls, 2, NULL));
    th_keys_by_server(e->r, 2, *c, prefix, keys, got);
    all[0] = keys[0][0];
    all[1] = keys[1][0];
    all[2] = keys[0][1];
    all[3] = keys[1][1];
    for (i = 0; i < 2; i++) {
        th_script_load(e->r[i], &rl__script_set_take);
        th_script_load(e->r[i], &rl__script_set_free);
        th_script_load(e->r[i], &rl__script_set_release);
    }
    return th_lock_set(*c, all, 4);
}

/*
 * A set over two servers takes each group, its keys of one namespace, by
 * set_take.lua (6 keys: each lock and its marker, the counter, the void
 * marker), and releases each by set_free.lua, the
 * group's lock keys alone, when nobody waits (its token of the native
 * prefix); a waiter behind a key of one group marks it, and that group's
 * release falls to set_release.lua, which wakes the waiter within 1.5 s
 * of the release of a 30 s lease; the other group's stays lean.
 */
void test_spread_lean_release(void)
{
    th_servers e = th_servers_start(2);
    redislock_client *c = NULL;
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    redislock_acquire_options wo = th_aopts(30000, 10000, 0);
    redislock_lock *s;
    char keys[2][3][24];
    const char *all[4];
    char marked[128];
    int i;
    long long nkeys = 0;
    int64_t t0;
    th_waiter w;

    s = four_over_two(&e, &c, "ln", keys, all);
    for (i = 0; i < 2; i++)
        th_slowlog_all(e.r[i]);
    ASSERT_OK(redislock_acquire(s, &o));
    ASSERT_EQ_INT(strncmp(redislock_token(s), "rl2-", 4), 0);
    for (i = 0; i < 2; i++) {
        ASSERT_EQ_INT(th_slowlog_runs(e.r[i], &rl__script_set_take, &nkeys), 1);
        ASSERT_EQ_INT(nkeys, 6);
        ASSERT_EQ_INT(th_slowlog_runs(e.r[i], &rl__script_set_acquire, &nkeys),
                      0);
        th_slowlog_all(e.r[i]);
    }
    ASSERT_OK(redislock_release(s));
    ASSERT_EQ_INT(th_lock_keys_anywhere(&e), 0);
    for (i = 0; i < 2; i++) {
        ASSERT_EQ_INT(th_slowlog_runs(e.r[i], &rl__script_set_free, &nkeys), 1);
        ASSERT_EQ_INT(nkeys, 2);
        ASSERT_EQ_INT(th_slowlog_runs(e.r[i], &rl__script_set_release, &nkeys),
                      0);
    }
    /* A waiter behind server 1's first key. */
    ASSERT_OK(redislock_acquire(s, &o));
    th_waiter_start(&w, c, all[1], &wo);
    th_wait_blocked(e.r[1], 1, 5000);
    /* Marked: the token, then the waiter's "+w". */
    snprintf(marked, sizeof marked, "%s+w", redislock_token(s));
    ASSERT_KEY(e.r[1], all[1], marked);
    for (i = 0; i < 2; i++)
        th_slowlog_all(e.r[i]);
    t0 = th_now_us();
    ASSERT_OK(redislock_release(s));
    th_waiter_join_ok(&w, 5000);
    test_log("the waiter held its key %lld ms after the release",
             (long long)((w.done_us - t0) / 1000));
    ASSERT_LE((w.done_us - t0) / 1000, 1500);
    ASSERT_EQ_INT(th_slowlog_runs(e.r[0], &rl__script_set_free, &nkeys), 1);
    ASSERT_EQ_INT(th_slowlog_runs(e.r[0], &rl__script_set_release, &nkeys), 0);
    ASSERT_EQ_INT(th_slowlog_runs(e.r[1], &rl__script_set_free, &nkeys), 1);
    ASSERT_EQ_INT(th_slowlog_runs(e.r[1], &rl__script_set_release, &nkeys), 1);
    ASSERT_OK(redislock_release(w.l));
    redislock_lock_free(w.l);
    redislock_lock_free(s);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/*
 * A waiter behind a key of a set over two servers whose holder's key
 * went without a release script (deleted by hand) sleeps on while the
 * set takes the key unmarked. Whichever group's server it waits on (the
 * first group taken or a later one), the set's acquire learns of it
 * (set_acquire.lua's fifth answer, kept over the groups) and its release
 * is set_release.lua on each server, which wakes the waiter within
 * 1.5 s, not at the end of its block (the first holder's 20 s lease).
 */
void test_spread_taker_behind_waiters_wakes_them(void)
{
    th_servers e = th_servers_start(2);
    redislock_client *c = NULL;
    redislock_acquire_options ho = th_aopts(20000, 0, 0);
    redislock_acquire_options wo = th_aopts(30000, 30000, 0);
    redislock_lock *s, *h;
    char keys[2][3][24];
    const char *all[4];
    int at;
    long long nkeys = 0;
    int64_t t0;
    th_waiter w;

    s = four_over_two(&e, &c, "lt", keys, all);
    for (at = 0; at < 2; at++) {
        h = th_lock(c, keys[at][1]);
        ASSERT_OK(redislock_acquire(h, &ho));
        th_waiter_start(&w, c, keys[at][1], &wo);
        th_wait_blocked(e.r[at], 1, 5000);
        /* The holder's key goes, and nothing wakes the waiter. */
        ASSERT_EQ_INT(th_cmd_int(e.r[at], "DEL %s", keys[at][1]), 1);
        ASSERT_OK(redislock_acquire(s, &ho));
        th_wait_blocked(e.r[at], 1, 5000);
        th_slowlog_all(e.r[0]);
        th_slowlog_all(e.r[1]);
        t0 = th_now_us();
        ASSERT_OK(redislock_release(s));
        th_waiter_join_ok(&w, 30000);
        test_log("waiting on server %d: it held the key %lld ms after the "
                 "set's release",
                 at, (long long)((w.done_us - t0) / 1000));
        ASSERT_LE((w.done_us - t0) / 1000, 1500);
        ASSERT_EQ_INT(th_slowlog_runs(e.r[at], &rl__script_set_free, &nkeys),
                      0);
        ASSERT_EQ_INT(th_slowlog_runs(e.r[at], &rl__script_set_release, &nkeys),
                      1);
        ASSERT_KEY(e.r[at], keys[at][1], w.token);
        ASSERT_OK(redislock_release(w.l));
        ASSERT_EQ_INT(th_lock_keys_anywhere(&e), 0);
        ASSERT_ERR(redislock_release(h), REDISLOCK_EEXPIRED);
        redislock_lock_free(w.l);
        redislock_lock_free(h);
    }
    redislock_lock_free(s);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/*
 * A set over two servers, waiting behind its key on one of them with a
 * lock's waiter blocked after it there; then its key on the other server
 * is taken, and the first key's holder releases. The set takes the one
 * wake and is refused by the other server's key: where that key's group
 * comes first, the set never reached the group it was woken from, and
 * passes the wake on there itself (agroup.c, wake.lua); where it comes
 * second, the set took the first group and gave it back by
 * set_release.lua, which woke the lock's waiter. Either way the lock's
 * waiter holds its key within 1.5 s of the release, not at the end of
 * its block (15 s).
 */
void test_spread_set_waiter_passes_wake_on(void)
{
    th_servers e = th_servers_start(2);
    redislock_client *c = NULL;
    redislock_acquire_options ho = th_aopts(30000, 0, 0);
    redislock_acquire_options wo = th_aopts(30000, 30000, 0);
    redislock_lock *s, *h, *x;
    char keys[2][3][24];
    const char *all[4], *two[2];
    int at;
    int64_t t0;
    th_waiter ws, w;

    s = four_over_two(&e, &c, "pw", keys, all);
    redislock_lock_free(s);
    for (at = 0; at < 2; at++) {
        two[0] = keys[0][0];
        two[1] = keys[1][0];
        s = th_lock_set(c, two, 2);
        h = th_lock(c, keys[at][0]);
        x = th_lock(c, keys[1 - at][0]);
        ASSERT_OK(redislock_acquire(h, &ho));
        th_waiter_start_lock(&ws, s, &wo);
        th_wait_blocked(e.r[at], 1, 5000);
        th_waiter_start(&w, c, keys[at][0], &wo);
        th_wait_blocked(e.r[at], 2, 5000);
        ASSERT_OK(redislock_acquire(x, &ho));
        t0 = th_now_us();
        ASSERT_OK(redislock_release(h));
        th_waiter_join_ok(&w, 25000);
        test_log("waiting on server %d: the lock's waiter held its key %lld "
                 "ms after the release",
                 at, (long long)((w.done_us - t0) / 1000));
        ASSERT_LE((w.done_us - t0) / 1000, 1500);
        ASSERT_KEY(e.r[at], keys[at][0], w.token);
        /* The set waits on behind the other server's key, and takes both
         * once both are free. */
        th_wait_blocked(e.r[1 - at], 1, 5000);
        ASSERT_OK(redislock_release(w.l));
        ASSERT_OK(redislock_release(x));
        th_waiter_join_ok(&ws, 5000);
        ASSERT_OK(redislock_release(s));
        ASSERT_EQ_INT(th_lock_keys_anywhere(&e), 0);
        redislock_lock_free(w.l);
        redislock_lock_free(x);
        redislock_lock_free(h);
        redislock_lock_free(s);
    }
    redislock_client_free(c);
    th_servers_stop(&e);
}
