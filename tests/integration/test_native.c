/*
 * native: a plain lock's release as the server's own compare-and-delete
 * (DELIFEQ on Valkey 9, DELEX IFEQ on Redis 8.4 and later) where the
 * server has one, the release script elsewhere, and the waiter's mark
 * that keeps the native release from leaving a waiter asleep.
 *
 * Each test runs on whichever server the harness starts (make check's,
 * or scripts/check-servers.sh's newer ones), asks that server itself
 * whether it has the command (COMMAND INFO, not the library's reading of
 * HELLO), and asserts the path that server must take: the native one
 * where it has it, the script where it does not. What went to the
 * server is read from INFO commandstats.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cluster.h"
#include "harness/fixture.h"
#include "harness/sentinel.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

/* How soon after the release a blocked waiter must hold the lock (a
 * failed compare, the script, a wake-up, on a loaded box under ASan). */
#define LATE_MS 1500
/* How long a setup step (a waiter's mark showing up) may take. */
#define SETUP_MS 5000

typedef th_env env;

/* The server's own compare-and-delete (th_native_release), logged. */
static const char *native_cmd(redisContext *r)
{
    const char *cmd = th_native_release(r);

    test_log("the server's compare-and-delete: %s", cmd ? cmd : "none");
    return cmd;
}

/* Calls of the server's compare-and-delete so far (0 without one). */
static long long native_calls(redisContext *r, const char *cmd)
{
    return cmd ? th_server_calls(r, cmd) : 0;
}

/* failed_calls of cmd: refusals and errors (rejected ones are counted
 * apart, in rejected_calls, read here too). */
static long long native_refusals(redisContext *r, const char *cmd)
{
    redisReply *rep = th_cmd(r, "INFO commandstats");
    char want[64];
    const char *p;
    long long n = 0;

    ASSERT(rep->type == REDIS_REPLY_STRING);
    snprintf(want, sizeof want, "cmdstat_%s:", cmd);
    if ((p = strstr(rep->str, want)) != NULL) {
        const char *q = strstr(p, "rejected_calls=");
        const char *f = strstr(p, "failed_calls=");
        if (q != NULL)
            n += atoll(q + 15);
        if (f != NULL)
            n += atoll(f + 13);
    }
    freeReplyObject(rep);
    return n;
}

/* One uncontended acquire and release of key; the token it held into
 * tok. */
static void cycle(redislock_client *c, const char *key, char *tok, size_t n)
{
    redislock_lock *l = th_lock(c, key);

    ASSERT_OK(redislock_acquire(l, NULL));
    snprintf(tok, n, "%s", redislock_token(l));
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
}

/* Three uncontended cycles of key on c, whose master r is: where the
 * server has a compare-and-delete, each release is that command, no
 * script (one script a cycle: the acquire); elsewhere it is the lean
 * script of the key alone, set_free.lua (two a cycle; since 2026-12-07,
 * before which such a server's tokens kept the old prefix and released
 * by release.lua), the command never sent. Either way the tokens are of
 * the native prefix and release.lua never runs: no GET (the acquire, the
 * command and the lean script send none; release.lua reads the key with
 * one). */
static void cycles_on(redislock_client *c, redisContext *r, const char *key)
{
    const char *cmd = native_cmd(r);
    char tok[128];
    long long s0, n0, g0;
    int i;

    /* The first lock of a client learns the node's commands (HELLO). */
    cycle(c, "nt:warm", tok, sizeof tok);
    s0 = th_script_calls(r);
    n0 = native_calls(r, cmd);
    g0 = th_server_calls(r, "get");
    for (i = 0; i < 3; i++) {
        cycle(c, key, tok, sizeof tok);
        ASSERT_EQ_INT(strncmp(tok, "rl2-", 4), 0);
        ASSERT_EQ_INT(th_cmd_int(r, "EXISTS %s", key), 0);
    }
    test_log("3 cycles: %lld scripts, %lld native releases, %lld GET",
             th_script_calls(r) - s0, native_calls(r, cmd) - n0,
             th_server_calls(r, "get") - g0);
    ASSERT_EQ_INT(th_script_calls(r) - s0, cmd ? 3 : 6);
    ASSERT_EQ_INT(native_calls(r, cmd) - n0, cmd ? 3 : 0);
    ASSERT_EQ_INT(th_server_calls(r, "get") - g0, 0);
}

void test_native_release_uncontended(void)
{
    env e = th_env_start();

    cycles_on(e.c, e.r, "nt:a");
    th_env_stop(&e);
}

/* The same through a Redis Cluster client: the slot's master is asked
 * for its commands by its first connection (HELLO). */
void test_native_release_cluster(void)
{
    th_cluster *tc = th_cluster_start(1, 0);
    redisContext *r = th_cluster_redis(tc, 0);
    redislock_client *c = NULL;

    ASSERT_OK(redislock_client_new_cluster(&c, tc->seeds, (size_t)tc->n, NULL));
    cycles_on(c, r, "nt:cl");
    redislock_client_free(c);
    redisFree(r);
    th_cluster_stop(tc);
}

/* And through Sentinel: the master the sentinels name. */
void test_native_release_sentinel(void)
{
    th_sentinels *t = th_sentinels_start(NULL);
    redisContext *r = th_sentinels_node_redis(t, 0);
    redislock_client *c = th_client_url(t->url, NULL);

    cycles_on(c, r, "nt:sn");
    redislock_client_free(c);
    redisFree(r);
    th_sentinels_stop(t);
}

/*
 * A holder of the native prefix and a waiter that blocks behind it: the
 * waiter marks the key's value (the token, then "+w") and leaves its
 * lease as it was; the holder still extends it (the mark kept), and its
 * release, the native compare (or elsewhere the lean script of its key,
 * since 2026-12-07) failing on the mark, runs release.lua, which frees it
 * and wakes the waiter within LATE_MS. The holder takes its token itself
 * on every server: the native prefix is every plain lock's.
 */
void test_native_waiter_marks_holder(void)
{
    env e = th_env_start();
    const char *cmd = native_cmd(e.r);
    redislock_acquire_options o = th_aopts(5000, 20000, 0);
    redislock_acquire_options ho = th_aopts(10000, 0, 0);
    redislock_lock *h = th_lock(e.c, "nt:m");
    char tok[64], marked[72];
    long long before, after, n0, g0;
    int64_t deadline, t_rel;
    redisReply *r;
    th_waiter w;

    ASSERT_OK(redislock_acquire(h, &ho));
    snprintf(tok, sizeof tok, "%s", redislock_token(h));
    ASSERT(strncmp(tok, "rl2-", 4) == 0);
    snprintf(marked, sizeof marked, "%s+w", tok);
    before = th_pttl(e.r, "nt:m");
    th_waiter_start(&w, e.c, "nt:m", &o);
    deadline = th_now_ms() + SETUP_MS;
    for (;;) {
        r = th_cmd(e.r, "GET nt:m");
        ASSERT(r->type == REDIS_REPLY_STRING);
        if (strcmp(r->str, marked) == 0 || th_now_ms() >= deadline)
            break;
        freeReplyObject(r);
        th_sleep_ms(5);
    }
    ASSERT_EQ_STR(r->str, marked);
    freeReplyObject(r);
    /* The mark keeps the lease: no longer than before it. */
    after = th_pttl(e.r, "nt:m");
    test_log("PTTL %lld before the mark, %lld after", before, after);
    ASSERT(after > 0 && after <= before);
    ASSERT_OK(redislock_extend(h, 15000));
    ASSERT_KEY(e.r, "nt:m", marked);
    ASSERT(th_pttl(e.r, "nt:m") > 10000);
    n0 = native_calls(e.r, cmd);
    g0 = th_server_calls(e.r, "get");
    t_rel = th_now_ms();
    ASSERT_OK(redislock_release(h));
    th_waiter_join_ok(&w, 5000);
    test_log("taken %lld ms after the release; native tries %lld, GET %lld",
             (long long)(w.done_us / 1000 - t_rel), native_calls(e.r, cmd) - n0,
             th_server_calls(e.r, "get") - g0);
    ASSERT_LE(w.done_us / 1000 - t_rel, LATE_MS);
    /* The holder tried the server's command first where it has one (the
     * lean try, elsewhere, wakes nobody either: the waiter's prompt grant
     * above is release.lua's wake). */
    ASSERT_EQ_INT(native_calls(e.r, cmd) - n0, cmd ? 1 : 0);
    ASSERT_KEY(e.r, "nt:m", w.token);
    ASSERT_OK(redislock_release(w.l));
    redislock_lock_free(w.l);
    redislock_lock_free(h);
    th_env_stop(&e);
}

/*
 * A token adopted by another handle (the CLI's release by token) may be
 * held behind waiters who blocked before its holder took the key and
 * so marked an earlier holder's value, not this one's: A holds, W1 and
 * W2 block behind it, A's release wakes one of them, and the other
 * still blocks, its mark on A's value gone with A. The winner's token,
 * adopted and released, must wake the other within LATE_MS, which a
 * native compare-and-delete (no wake) would not: it slept until its
 * block ended (half its lease, 5 s). So an adopted handle releases
 * by script at once, as a lock taken after a wait does.
 */
void test_native_adopted_release_wakes(void)
{
    env e = th_env_start();
    const char *cmd = native_cmd(e.r);
    redislock_acquire_options ho = th_aopts(10000, 0, 0);
    redislock_acquire_options o = th_aopts(10000, 30000, 0);
    redislock_lock *a = th_lock(e.c, "nt:ad");
    redislock_lock *adopter = th_lock(e.c, "nt:ad");
    char atok[64], held[64];
    th_waiter w[2], *win, *lose;
    int64_t deadline, t_rel;
    long long n0;
    redisReply *r;

    ASSERT_OK(redislock_acquire(a, &ho));
    snprintf(atok, sizeof atok, "%s", redislock_token(a));
    th_waiter_start(&w[0], e.c, "nt:ad", &o);
    th_waiter_start(&w[1], e.c, "nt:ad", &o);
    th_wait_blocked(e.r, 2, SETUP_MS);
    ASSERT_OK(redislock_release(a));
    /* One waiter takes it (its value, a mark aside, is its token). */
    deadline = th_now_ms() + SETUP_MS;
    for (;;) {
        r = th_cmd(e.r, "GET nt:ad");
        held[0] = '\0';
        if (r->type == REDIS_REPLY_STRING)
            snprintf(held, sizeof held, "%.36s", r->str);
        freeReplyObject(r);
        if ((held[0] != '\0' && strcmp(held, atok) != 0) ||
            th_now_ms() >= deadline)
            break;
        th_sleep_ms(5);
    }
    ASSERT(held[0] != '\0' && strcmp(held, atok) != 0);
    th_wait_blocked(e.r, 1, SETUP_MS);
    test_log("the winner holds %s, the other still blocks", held);
    ASSERT_OK(redislock_adopt(adopter, held));
    n0 = native_calls(e.r, cmd);
    t_rel = th_now_ms();
    ASSERT_OK(redislock_release(adopter));
    th_waiter_join_ok(&w[0], SETUP_MS + 10000);
    th_waiter_join_ok(&w[1], SETUP_MS + 10000);
    win = strcmp(w[0].token, held) == 0 ? &w[0] : &w[1];
    lose = win == &w[0] ? &w[1] : &w[0];
    ASSERT_EQ_STR(win->token, held);
    test_log("the other took it %lld ms after the adopted release",
             (long long)(lose->done_us / 1000 - t_rel));
    ASSERT_LE(lose->done_us / 1000 - t_rel, LATE_MS);
    /* The adopted handle released by script: no native try. */
    ASSERT_EQ_INT(native_calls(e.r, cmd) - n0, 0);
    ASSERT_KEY(e.r, "nt:ad", lose->token);
    /* The winner's own handle no longer holds it: another owner does. */
    ASSERT_ERR(redislock_release(win->l), REDISLOCK_ELOST);
    ASSERT_OK(redislock_release(lose->l));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS nt:ad"), 0);
    redislock_lock_free(w[0].l);
    redislock_lock_free(w[1].l);
    redislock_lock_free(adopter);
    redislock_lock_free(a);
    th_env_stop(&e);
}

/*
 * A waiter marks the holder it blocks behind; if that holder's key goes
 * without a release script (deleted by hand here, as an operator or
 * another tool might, or released by a waiter's last attempt that set no
 * mark), whoever takes the key next holds it unmarked while the waiter
 * still sleeps. The acquire tells it that someone waits (acquire.lua's
 * fifth answer), so its release is the script, which wakes the waiter
 * within LATE_MS; a native compare-and-delete would leave it asleep until
 * its block ends (half its lease, 10 s here).
 */
void test_native_taker_behind_waiters_wakes_them(void)
{
    env e = th_env_start();
    const char *cmd = native_cmd(e.r);
    redislock_acquire_options ho = th_aopts(30000, 0, 0);
    redislock_acquire_options o = th_aopts(20000, 30000, 0);
    redislock_lock *a = th_lock(e.c, "nt:tk");
    redislock_lock *c = th_lock(e.c, "nt:tk");
    int64_t t_rel;
    long long n0;
    th_waiter w;

    ASSERT_OK(redislock_acquire(a, &ho));
    th_waiter_start(&w, e.c, "nt:tk", &o);
    th_wait_blocked(e.r, 1, SETUP_MS);
    /* The holder's key goes, and nothing wakes the waiter. */
    ASSERT_EQ_INT(th_cmd_int(e.r, "DEL nt:tk"), 1);
    ASSERT_OK(redislock_acquire(c, &ho));
    th_wait_blocked(e.r, 1, SETUP_MS);
    n0 = native_calls(e.r, cmd);
    t_rel = th_now_ms();
    ASSERT_OK(redislock_release(c));
    th_waiter_join_ok(&w, SETUP_MS + 15000);
    test_log("the waiter took it %lld ms after the taker's release",
             (long long)(w.done_us / 1000 - t_rel));
    ASSERT_LE(w.done_us / 1000 - t_rel, LATE_MS);
    /* The taker knew someone waited: no native try. */
    ASSERT_EQ_INT(native_calls(e.r, cmd) - n0, 0);
    ASSERT_KEY(e.r, "nt:tk", w.token);
    ASSERT_OK(redislock_release(w.l));
    /* Free again; the first holder's handle finds its lock gone. */
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS nt:tk"), 0);
    ASSERT_ERR(redislock_release(a), REDISLOCK_EEXPIRED);
    redislock_lock_free(w.l);
    redislock_lock_free(c);
    redislock_lock_free(a);
    th_env_stop(&e);
}

/*
 * A key that became another type under its holder (a list here; a
 * semaphore's or readers' sorted set in the shared model): the release
 * answers as the script does, another owner's (REDISLOCK_ELOST) with
 * the key untouched, not with the native command's error (Redis 8.6:
 * "ERR Key should be of string type"; Valkey: WRONGTYPE).
 */
void test_native_release_of_another_type(void)
{
    env e = th_env_start();
    const char *cmd = native_cmd(e.r);
    redislock_lock *l = th_lock(e.c, "nt:t");
    long long n0;

    ASSERT_OK(redislock_acquire(l, NULL));
    ASSERT_EQ_INT(th_cmd_int(e.r, "DEL nt:t"), 1);
    ASSERT_EQ_INT(th_cmd_int(e.r, "RPUSH nt:t x"), 1);
    n0 = native_calls(e.r, cmd);
    ASSERT_ERR(redislock_release(l), REDISLOCK_ELOST);
    ASSERT_EQ_INT(native_calls(e.r, cmd) - n0, cmd ? 1 : 0);
    ASSERT_EQ_INT(th_cmd_int(e.r, "LLEN nt:t"), 1);
    redislock_lock_free(l);
    th_env_stop(&e);
}

/*
 * A lock taken after a wait is most likely wanted again: its release is
 * the script at once, not a native compare bound to fail on a waiter's
 * mark.
 */
void test_native_release_after_wait_is_script(void)
{
    env e = th_env_start();
    const char *cmd = native_cmd(e.r);
    redislock_acquire_options o = th_aopts(5000, 20000, 0);
    redislock_lock *h = th_lock(e.c, "nt:w");
    long long n0;
    th_waiter w;

    ASSERT_OK(redislock_acquire(h, NULL));
    th_waiter_start(&w, e.c, "nt:w", &o);
    th_wait_blocked(e.r, 1, SETUP_MS);
    ASSERT_OK(redislock_release(h));
    th_waiter_join_ok(&w, 5000);
    n0 = native_calls(e.r, cmd);
    ASSERT_OK(redislock_release(w.l));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS nt:w"), 0);
    ASSERT_EQ_INT(native_calls(e.r, cmd) - n0, 0);
    redislock_lock_free(w.l);
    redislock_lock_free(h);
    th_env_stop(&e);
}

/*
 * A user whose ACL refuses the compare-and-delete (the server has it) or
 * who may run only what the script needs: every release still frees its
 * lock, by the script, and the node's memo stops the refused command
 * after its first refusal.
 */
void test_native_refused_falls_back(void)
{
    env e = th_env_start();
    const char *cmd = native_cmd(e.r);
    redislock_client *c;
    char url[128], tok[128];
    int i;

    freeReplyObject(th_cmd(e.r, "ACL SETUSER locker on >pw ~* &* +@all"));
    if (cmd != NULL)
        freeReplyObject(th_cmd(e.r, "ACL SETUSER locker -%s", cmd));
    snprintf(url, sizeof url, "redis://locker:pw@127.0.0.1:%d", e.s->port);
    c = th_client_url(url, NULL);
    for (i = 0; i < 4; i++) {
        cycle(c, "nt:acl", tok, sizeof tok);
        ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS nt:acl"), 0);
    }
    if (cmd != NULL) {
        test_log("%s refused %lld times", cmd, native_refusals(e.r, cmd));
        ASSERT_EQ_INT(native_refusals(e.r, cmd), 1);
    }
    redislock_client_free(c);
    th_env_stop(&e);
}

/* Whether the server has MSETEX (Redis 8.4+, Valkey 9.1+), by its own
 * COMMAND INFO, logged. */
static int has_msetex(redisContext *r)
{
    redisReply *rep = th_cmd(r, "COMMAND INFO MSETEX");
    int has;

    ASSERT(rep->type == REDIS_REPLY_ARRAY && rep->elements == 1);
    has = rep->element[0]->type == REDIS_REPLY_ARRAY;
    freeReplyObject(rep);
    test_log("the server has MSETEX: %s", has ? "yes" : "no");
    return has;
}

/* Acquires the set of 8 keys ms:0..ms:7 on c and checks that each holds
 * its token with a lease of at most ttl ms, then releases it. */
static void set_cycle(redislock_client *c, redisContext *r, int64_t ttl)
{
    static const char *const keys[] = {"ms:0", "ms:1", "ms:2", "ms:3",
                                       "ms:4", "ms:5", "ms:6", "ms:7"};
    redislock_lock *l = th_lock_set(c, keys, 8);
    redislock_acquire_options o = th_aopts(ttl, 0, 0);
    size_t i, n;
    char *v;

    ASSERT_OK(redislock_acquire(l, &o));
    for (i = 0; i < 8; i++) {
        long long left = th_cmd_int(r, "PTTL %s", keys[i]);

        v = th_cmd_str(r, &n, "GET %s", keys[i]);
        ASSERT_EQ_STR(v, redislock_token(l));
        free(v);
        ASSERT_GT(left, 0);
        ASSERT_LE(left, ttl);
    }
    ASSERT_OK(redislock_release(l));
    for (i = 0; i < 8; i++)
        ASSERT_EQ_INT(th_cmd_int(r, "EXISTS %s", keys[i]), 0);
    redislock_lock_free(l);
}

/*
 * A set's keys are written by one MSETEX where the server has it, by a
 * SET each elsewhere: per acquire of a set of 8, MSETEX once and SET once
 * (the fencing counter), or SET nine times; the keys hold the token with
 * the lease either way.
 */
void test_native_set_one_msetex(void)
{
    env e = th_env_start();
    int has = has_msetex(e.r);
    long long m0, s0;
    int i;

    set_cycle(e.c, e.r, 30000);
    m0 = th_server_calls(e.r, "msetex");
    s0 = th_server_calls(e.r, "set");
    for (i = 0; i < 3; i++)
        set_cycle(e.c, e.r, 20000);
    test_log("3 set acquires: %lld MSETEX, %lld SET",
             th_server_calls(e.r, "msetex") - m0,
             th_server_calls(e.r, "set") - s0);
    ASSERT_EQ_INT(th_server_calls(e.r, "msetex") - m0, has ? 3 : 0);
    ASSERT_EQ_INT(th_server_calls(e.r, "set") - s0, has ? 3 : 27);
    th_env_stop(&e);
}

/*
 * A user whose ACL refuses MSETEX on a server that has it: every set is
 * still taken whole, by the SETs, and the Functions library (this user
 * may FCALL) remembers the refusal, so the server refuses MSETEX once,
 * not on every acquire; scripts sent by EVALSHA (a key-check build sends
 * no library) remember nothing between calls, and try each time.
 */
void test_native_set_msetex_refused_falls_back(void)
{
    env e = th_env_start();
    int has = has_msetex(e.r), fn;
    redislock_client *c;
    char url[128];
    int i;

    freeReplyObject(th_cmd(e.r, "ACL SETUSER locker on >pw ~* &* +@all"));
    if (has)
        freeReplyObject(th_cmd(e.r, "ACL SETUSER locker -msetex"));
    snprintf(url, sizeof url, "redis://locker:pw@127.0.0.1:%d", e.s->port);
    c = th_client_url(url, NULL);
    for (i = 0; i < 4; i++)
        set_cycle(c, e.r, 20000);
    fn = th_server_calls(e.r, "fcall") > 0;
    test_log("MSETEX refused %lld times (scripts by %s)",
             native_refusals(e.r, "msetex"), fn ? "FCALL" : "EVALSHA");
    ASSERT_EQ_INT(native_refusals(e.r, "msetex"), !has ? 0 : fn ? 1 : 4);
    ASSERT_EQ_INT(th_server_calls(e.r, "msetex"), 0);
    redislock_client_free(c);
    th_env_stop(&e);
}
