/*
 * fair: FIFO waiting (redislock_acquire_options.fair). Waiters queue in a
 * sorted set by arrival; a release hands the lock straight to the
 * longest-waiting live waiter. These tests check the order, that the
 * hand-off is done by the release itself, that a dead waiter stalls the
 * queue no longer than its alive window, that a waiter that gives up
 * leaves the queue (passing on a lock handed to it meanwhile), that hash
 * locks keep owner and metadata across a hand-off, that holders alternate
 * under contention, and that the helper keys go away.
 *
 * The queue is read from the server: ZRANGE <key>{<key>}:rl-q.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/fixture.h"
#include "harness/server.h"
#include "harness/util.h"
#include "script.h"
#include "test.h"

#define KEY "fq:k"
/* The lock's helper keys: "<key>{<key>}:rl-<suffix>" (lock.c). */
#define BASE KEY "{" KEY "}:rl-"
#define QUEUE BASE "q"
#define WAITERS BASE "ws"
/* The library's alive window for fair waiters (acquire.c). */
#define ALIVE_MS 5000
/* Round trips and scheduling on a loaded 2-core box under ASan. */
#define SLACK_MS 250
#define SETUP_MS 5000
#define TOKLEN 300
#define FOREVER REDISLOCK_WAIT_FOREVER

typedef struct env {
    th_server *s;
    redisContext *r;
    redislock_client *c;
    redislock_lock *holder;
} env;

/* A server, a client, and (ttl_ms > 0) a plain holder of KEY. The
 * release script is loaded first, so that no release below meets a
 * NOSCRIPT and needs a second round trip (which would upset counts and
 * the order of events). */
/* A server, a client, and a holder of KEY for ttl_ms (0: none) taken in
 * fair mode or not. A holder taken in fair mode releases by the script
 * alone; one taken otherwise may first try the server's own
 * compare-and-delete where it has one, which a fair waiter's mark fails
 * (test_native), a command more in a recording. */
static env env_start_as(int64_t ttl_ms, int fair)
{
    redislock_acquire_options o = th_aopts(100, 0, 0);
    env e;

    o.fair = fair;

    e.s = th_server_start(NULL);
    e.r = th_server_redis(e.s);
    e.c = th_client(e.s);
    e.holder = th_lock(e.c, KEY);
    ASSERT_OK(redislock_acquire(e.holder, &o));
    ASSERT_OK(redislock_release(e.holder));
    o.ttl_ms = ttl_ms;
    if (ttl_ms > 0)
        ASSERT_OK(redislock_acquire(e.holder, &o));
    return e;
}

static env env_start(int64_t ttl_ms)
{
    return env_start_as(ttl_ms, 0);
}

static void env_stop(env *e)
{
    redislock_lock_free(e->holder);
    redislock_client_free(e->c);
    redisFree(e->r);
    th_server_stop(e->s);
}

static void wait_listening(redisContext *r, long long n)
{
    int64_t deadline = th_now_ms() + SETUP_MS;
    long long got;

    while ((got = th_listening(r, BASE "c:*")) != n && th_now_ms() < deadline)
        th_sleep_ms(2);
    if (got != n)
        test_fail_(__FILE__, __LINE__,
                   "%lld waiters listening after %d ms, want %lld", got,
                   SETUP_MS, n);
}

/* The entry of queue member id in the waiters' hash (lib.lua's
 * rl_waiter_entry: "<alive> <ttl> <fmt> <P|S> <#chan> <#meta>
 * <chan><meta><owner>"): its alive time (server ms) and, when owner is
 * not NULL, its owner id (TOKLEN bytes). 0 when it has none. */
static long long waiter_entry(redisContext *r, const char *id, char *owner)
{
    char *v = th_cmd_str(r, NULL, "HGET " WAITERS " %s", id);
    long long alive = 0, ttl, nc, nm;
    char fmt[16], pub[4];
    int at = 0;

    if (v != NULL &&
        sscanf(v, "%lld %lld %15s %3s %lld %lld %n", &alive, &ttl, fmt, pub,
               &nc, &nm, &at) == 6 &&
        at > 0 && owner != NULL)
        snprintf(owner, TOKLEN, "%s", v + at + nc + nm);
    free(v);
    return alive;
}

/* How long queue member id has left before it counts as dead. */
static long long alive_left_ms(redisContext *r, const char *id)
{
    redisReply *t = th_cmd(r, "TIME");
    long long now = strtoll(t->element[0]->str, NULL, 10) * 1000 +
                    strtoll(t->element[1]->str, NULL, 10) / 1000;

    freeReplyObject(t);
    return waiter_entry(r, id, NULL) - now;
}

/* Waits until the queue has n members; copies the last one (the newest
 * arrival) to tok. */
static void wait_queued(redisContext *r, size_t n, char *tok)
{
    int64_t deadline = th_now_ms() + SETUP_MS;
    redisReply *rep;
    size_t got;

    for (;;) {
        rep = th_cmd(r, "ZRANGE " QUEUE " 0 -1");
        got = rep->elements;
        if (got == n && tok != NULL)
            snprintf(tok, TOKLEN, "%s", rep->element[n - 1]->str);
        freeReplyObject(rep);
        if (got == n)
            return;
        if (th_now_ms() >= deadline)
            test_fail_(__FILE__, __LINE__,
                       "queue has %zu waiters after %d ms, want %zu", got,
                       SETUP_MS, n);
        th_sleep_ms(2);
    }
}

/* Acquisitions by waiters so far (each test has a process of its own). */
static _Atomic int acquired;

/* A fair acquire on another thread. On success it records the order in
 * which it got the lock, and optionally holds it hold_ms and releases. */
typedef struct waiter {
    pthread_t t;
    redislock_lock *l;
    redislock_acquire_options o;
    int order;       /* 1-based: the order it got the lock in */
    int64_t hold_ms; /* < 0: keep the lock */
    redislock_err err, rel_err;
    int64_t done_us;
    char token[TOKLEN];
    char detail[256];
} waiter;

static void *wait_thread(void *arg)
{
    waiter *w = arg;

    w->err = redislock_acquire(w->l, &w->o);
    w->done_us = th_now_us();
    snprintf(w->detail, sizeof w->detail, "%s", redislock_errdetail());
    if (w->err != REDISLOCK_OK)
        return NULL;
    snprintf(w->token, sizeof w->token, "%s", redislock_token(w->l));
    w->order = atomic_fetch_add(&acquired, 1) + 1;
    if (w->hold_ms >= 0) {
        th_sleep_ms(w->hold_ms);
        w->rel_err = redislock_release(w->l);
    }
    return NULL;
}

/* Fair acquire options. */
static redislock_acquire_options fair_opts(int64_t ttl_ms, int64_t wait_ms)
{
    redislock_acquire_options o = th_aopts(ttl_ms, wait_ms, 0);

    o.fair = 1;
    return o;
}

/* Starts a waiter on KEY with options o; hold_ms >= 0: it then holds the
 * lock that long and releases it. */
static void waiter_start(waiter *w, redislock_client *c,
                         redislock_acquire_options o, int64_t hold_ms)
{
    memset(w, 0, sizeof *w);
    w->l = th_lock(c, KEY);
    w->o = o;
    w->hold_ms = hold_ms;
    ASSERT_EQ_INT(pthread_create(&w->t, NULL, wait_thread, w), 0);
}

static void waiter_join(waiter *w, int64_t ms, redislock_err want)
{
    th_join_within(w->t, ms);
    if (w->err != want)
        test_fail_(__FILE__, __LINE__, "waiter: %s, want %s; %s",
                   redislock_errname(w->err), redislock_errname(want),
                   w->detail);
}

#define NFIFO 5

void test_fair_fifo_order(void)
{
    env e = env_start(30000);
    char queued[NFIFO][TOKLEN];
    waiter w[NFIFO];
    int i;

    for (i = 0; i < NFIFO; i++) {
        waiter_start(&w[i], e.c, fair_opts(30000, FOREVER), 20);
        wait_queued(e.r, (size_t)i + 1, queued[i]);
    }
    ASSERT_OK(redislock_release(e.holder));
    for (i = 0; i < NFIFO; i++) {
        waiter_join(&w[i], 10000, REDISLOCK_OK);
        ASSERT_ERR(w[i].rel_err, REDISLOCK_OK);
    }
    test_log("arrival W1..W5 got the lock as #%d #%d #%d #%d #%d", w[0].order,
             w[1].order, w[2].order, w[3].order, w[4].order);
    for (i = 0; i < NFIFO; i++) {
        ASSERT_EQ_INT(w[i].order, i + 1);
        ASSERT_EQ_STR(w[i].token, queued[i]);
        redislock_lock_free(w[i].l);
    }
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " KEY " " QUEUE), 0);
    env_stop(&e);
}

/* MONITOR lines (client commands and script commands alike), read from
 * the start of the recording up to a marker. */
#define MON_MAX 256
typedef struct mon_log {
    int n;
    char line[MON_MAX][512];
} mon_log;

static redisContext *mon_start(const th_server *s)
{
    redisContext *m = th_server_redis(s);

    freeReplyObject(th_cmd(m, "MONITOR"));
    return m;
}

static void mon_stop(redisContext *m, redisContext *r, mon_log *log)
{
    redisReply *rep;
    int done = 0;

    freeReplyObject(th_cmd(r, "ECHO rl-monitor-end"));
    log->n = 0;
    while (!done) {
        if (redisGetReply(m, (void **)&rep) != REDIS_OK)
            test_fail_(__FILE__, __LINE__, "MONITOR: %s", m->errstr);
        done = rep->type == REDIS_REPLY_STATUS &&
               strstr(rep->str, "rl-monitor-end") != NULL;
        if (!done && rep->type == REDIS_REPLY_STATUS && log->n < MON_MAX)
            snprintf(log->line[log->n++], sizeof log->line[0], "%s", rep->str);
        freeReplyObject(rep);
    }
    redisFree(m);
}

static int mon_is_lua(const char *line)
{
    return strstr(line, " lua] ") != NULL;
}

/* The index of the first line from a script (lua 1) or a client (lua 0)
 * that contains needle; -1 if none. */
static int mon_find(const mon_log *log, int lua, const char *needle)
{
    int i;

    for (i = 0; i < log->n; i++)
        if (mon_is_lua(log->line[i]) == lua && strstr(log->line[i], needle))
            return i;
    return -1;
}

void test_fair_handoff_is_direct(void)
{
    env e = env_start_as(30000, 1);
    char queued[TOKLEN], setline[TOKLEN + 64], *v;
    const char *holder_tok;
    redisContext *m;
    mon_log *log = malloc(sizeof *log);
    int64_t t0;
    waiter w;
    int i, scripts = 0, released = 0;

    ASSERT(log != NULL);
    holder_tok = redislock_token(e.holder);
    waiter_start(&w, e.c, fair_opts(30000, FOREVER), -1);
    wait_queued(e.r, 1, queued);
    wait_listening(e.r, 1);
    m = mon_start(e.s);
    t0 = th_now_us();
    ASSERT_OK(redislock_release(e.holder));
    /* Straight after the release: the lock is already the waiter's. */
    v = th_cmd_str(e.r, NULL, "GET " KEY);
    waiter_join(&w, 3000, REDISLOCK_OK);
    mon_stop(m, e.r, log);
    test_log("hand-off: release start to the waiter's acquire return "
             "%lld us",
             (long long)(w.done_us - t0));
    ASSERT_EQ_STR(v, queued);
    ASSERT_EQ_STR(w.token, queued);
    ASSERT_LE((w.done_us - t0) / 1000, SLACK_MS);
    /* The release's script wrote the waiter's token; the only scripts
     * clients sent were the release (carrying the old holder's token)
     * and, from the client's watchdog thread and not on the waiter's
     * path, the extension of the handed lease (at most the waiter's
     * alive window) to its full TTL: that carries the waiter's token and
     * its TTL. The waiter itself sent nothing after waking (a blocking
     * call's channel stays subscribed for its handle's next wait; an
     * UNSUBSCRIBE, which it would not wait for, is let pass). Before the
     * release, the recording may catch the end of its wait's start: its
     * SUBSCRIBE and the attempt after it. */
    snprintf(setline, sizeof setline, "\"SET\" \"%s\" \"%s\"", KEY, queued);
    ASSERT_GE(mon_find(log, 1, setline), 0);
    for (i = 0; i < log->n; i++) {
        const char *line = log->line[i];

        if (mon_is_lua(line))
            continue;
        if (!released && strstr(line, holder_tok) != NULL)
            released = 1;
        if (!released &&
            (strcasestr(line, "subscribe\"") || strstr(line, queued) != NULL))
            continue;
        if (strcasestr(line, "\"fcall\"") || strcasestr(line, "\"evalsha\"") ||
            strcasestr(line, "\"eval\"")) {
            if (strstr(line, queued) != NULL &&
                strstr(line, "\"30000\"") != NULL)
                continue; /* the extension */
            scripts++;
            if (strstr(line, holder_tok) == NULL)
                test_fail_(__FILE__, __LINE__, "not the release: %s", line);
        } else if (strstr(line, "\"GET\" \"" KEY "\"") == NULL &&
                   !strcasestr(line, "\"unsubscribe\"")) {
            /* Not our GET. */
            test_fail_(__FILE__, __LINE__, "unexpected command: %s", line);
        }
    }
    ASSERT_EQ_INT(scripts, 1);
    ASSERT_OK(redislock_release(w.l));
    redislock_lock_free(w.l);
    free(v);
    free(log);
    env_stop(&e);
}

/* The client address of a MONITOR line: "<time> [<db> <addr>] ...". */
static void mon_addr(const char *line, char *addr, size_t len)
{
    const char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;

    ASSERT(b != NULL);
    snprintf(addr, len, "%.*s", (int)(b - a), a);
}

/* Whether the client that sent line i sent a PING just before it. */
static int mon_pinged_before(const mon_log *log, int i)
{
    char addr[256], other[256];
    int j;

    mon_addr(log->line[i], addr, sizeof addr);
    for (j = i - 1; j >= 0; j--) {
        if (mon_is_lua(log->line[j]))
            continue;
        mon_addr(log->line[j], other, sizeof other);
        if (strcmp(addr, other) == 0)
            return strcasestr(log->line[j], "\"ping\"") != NULL;
    }
    return 0;
}

/* The line of tok's release (its token, then hold-after "0", format
 * how: 'p' plain, 'q' plain and taken by a fair call that queued), -1
 * if none. */
static int mon_release(const mon_log *log, const char *tok, char how)
{
    char args[TOKLEN + 16];

    snprintf(args, sizeof args, "\"%s\" \"0\" \"%c\"", tok, how);
    return mon_find(log, 0, args);
}

/* A hand-off's record in the waiters' hash (field "~": "<request> <fence>
 * <end ms>", which a late attempt of the waiter confirms) lasts as long
 * as the lease it names: the hash's expiry, read in the same script as
 * the server's clock, is past the record's end by rl_queue's 100 ms (at
 * least 50 here; the hand-off itself lengthens nothing). The lease is
 * bounded by the waiter's alive window (TTL 30 s), so its end is where
 * the waiter's own entry ended. */
void test_fair_handoff_record_outlives_lease(void)
{
    env e = env_start_as(30000, 1);
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    char queued[TOKLEN], who[TOKLEN + 1];
    long long now = 0, end = 0, fence, pttl = 0;
    redisReply *rp;
    waiter w;
    int round, seen = 0;

    o.fair = 1;
    /* The waiter's attempt after its SUBSCRIBE was confirmed may come
     * after the hand-off and confirm it, which drops the record: such a
     * round shows nothing and the next one tries again. */
    for (round = 0; round < 5 && !seen; round++) {
        if (round > 0)
            ASSERT_OK(redislock_acquire(e.holder, &o));
        waiter_start(&w, e.c, fair_opts(30000, FOREVER), -1);
        wait_queued(e.r, 1, queued);
        wait_listening(e.r, 1);
        ASSERT_OK(redislock_release(e.holder));
        rp = th_cmd(e.r, "EVAL %s 1 %s",
                    "local t = redis.call('TIME') "
                    "return {t[1], t[2], redis.call('HGET', KEYS[1], '~'), "
                    "redis.call('PTTL', KEYS[1])}",
                    WAITERS);
        ASSERT_EQ_INT(rp->type, REDIS_REPLY_ARRAY);
        ASSERT_EQ_INT(rp->elements, 4);
        if (rp->element[2]->type == REDIS_REPLY_STRING) {
            seen = 1;
            now = strtoll(rp->element[0]->str, NULL, 10) * 1000 +
                  strtoll(rp->element[1]->str, NULL, 10) / 1000;
            ASSERT_EQ_INT(sscanf(rp->element[2]->str, "%299s %lld %lld", who,
                                 &fence, &end),
                          3);
            pttl = rp->element[3]->integer;
        }
        freeReplyObject(rp);
        waiter_join(&w, 3000, REDISLOCK_OK);
        ASSERT_EQ_STR(w.token, queued);
        ASSERT_OK(redislock_release(w.l));
        redislock_lock_free(w.l);
    }
    ASSERT(seen);
    test_log("in %d round(s): the record ends %lld ms from now, the hash "
             "%lld ms",
             round, end - now, pttl);
    ASSERT_EQ_STR(who, queued);
    ASSERT_GT(end, now);
    ASSERT_LE(end, now + ALIVE_MS);
    ASSERT_GE(now + pttl, end + 50);
    env_stop(&e);
}

/* The release of a hold taken by a fair call that queued goes after a
 * PING in the same write, so that the server writes the next holder's
 * hand-off message before the releaser's reply (request.h); other
 * releases do not. H (default mode) hands to W1, W1 (queued) to W2. */
void test_fair_release_pings_first(void)
{
    /* Over TCP: MONITOR tells connections apart by their port. */
    env e = env_start(0);
    redislock_client *c =
        th_client_url_at_(__FILE__, __LINE__, e.s->tcp_url, NULL);
    redislock_lock *h = th_lock(c, KEY);
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    char w1[TOKLEN], w2[TOKLEN], htok[TOKLEN];
    redisContext *m;
    mon_log *log = malloc(sizeof *log);
    waiter a, b;
    int hl, al;

    ASSERT(log != NULL);
    ASSERT_OK(redislock_acquire(h, &o));
    snprintf(htok, sizeof htok, "%s", redislock_token(h));
    waiter_start(&a, c, fair_opts(30000, FOREVER), -1);
    wait_queued(e.r, 1, w1);
    m = mon_start(e.s);
    ASSERT_OK(redislock_release(h));
    waiter_join(&a, 3000, REDISLOCK_OK);
    waiter_start(&b, c, fair_opts(30000, FOREVER), -1);
    wait_queued(e.r, 1, w2);
    ASSERT_OK(redislock_release(a.l));
    waiter_join(&b, 3000, REDISLOCK_OK);
    mon_stop(m, e.r, log);
    ASSERT_EQ_STR(b.token, w2);
    hl = mon_release(log, htok, 'p');
    /* A queued fair holder's release says so (release.lua's 'q'). */
    al = mon_release(log, w1, 'q');
    ASSERT_GE(hl, 0);
    ASSERT_GE(al, 0);
    test_log("H's release: %s", log->line[hl]);
    test_log("W1's release: %s", log->line[al]);
    ASSERT(!mon_pinged_before(log, hl));
    ASSERT(mon_pinged_before(log, al));
    ASSERT_OK(redislock_release(b.l));
    redislock_lock_free(a.l);
    redislock_lock_free(b.l);
    redislock_lock_free(h);
    redislock_client_free(c);
    free(log);
    env_stop(&e);
}

/* A retry strategy of one fixed pause that counts the pauses planned,
 * for a test to know that the waiter is in the pause after an attempt. */
typedef struct counted {
    int64_t pause;
    atomic_int planned;
} counted;

static int64_t counted_pause(void *arg, int attempt, int64_t holder_ttl_ms)
{
    counted *c = arg;

    (void)attempt;
    (void)holder_ttl_ms;
    atomic_fetch_add(&c->planned, 1);
    return c->pause;
}

/* Waits (bounded) until the waiter using c is in its second pause: that
 * pause is planned after its second attempt (the first only subscribed
 * to its channel). */
static void wait_second_pause(counted *c)
{
    int64_t deadline = th_now_ms() + SETUP_MS;

    while (atomic_load(&c->planned) < 2) {
        ASSERT_LT(th_now_ms(), deadline);
        th_sleep_ms(2);
    }
}

/* A hand-off told long after the waiter's last attempt (more than half
 * its lease) is confirmed by an attempt, which makes the lease the TTL
 * from then: the waiter counts a hand-off's lease from its last attempt
 * (the hand-off came after it), so without the confirmation it would
 * start with less than half its validity, and a watchdog held up for a
 * moment would report as lost a lease the server keeps for another
 * several hundred ms (the 2026-11-29 flake hunt's false loss). The
 * waiter (TTL 1 s) pauses 4 s after its second attempt; the holder
 * releases 0.7 s into that pause. */
void test_fair_late_handoff_confirmed(void)
{
    env e = env_start(30000);
    counted cp = {4000, 0};
    redislock_acquire_options o = fair_opts(1000, 10000);
    int64_t valid;
    waiter w;

    o.retry_fn = counted_pause;
    o.retry_arg = &cp;
    waiter_start(&w, e.c, o, -1);
    wait_second_pause(&cp);
    wait_listening(e.r, 1);
    th_sleep_ms(700);
    ASSERT_OK(redislock_release(e.holder));
    waiter_join(&w, 3000, REDISLOCK_OK);
    valid = redislock_valid_ms(w.l);
    test_log("validity on return %lld ms of 1000", (long long)valid);
    ASSERT_GT(valid, 500);
    ASSERT_GT(th_cmd_int(e.r, "PTTL " KEY), 500);
    ASSERT_OK(redislock_release(w.l));
    redislock_lock_free(w.l);
    env_stop(&e);
}

/* A fair waiter queued behind a holder whose lease ends without a
 * release (no hand-off: the key is deleted here, as an expiry would) is
 * handed the lock by the next fair waiter's attempt, not left to its own
 * next heartbeat; the newcomer queues behind it and is handed the lock
 * by its release. A (pausing 4 s after its second attempt) queues behind
 * the holder, whose key goes; B's attempt must let A in within 300 ms. */
void test_fair_head_let_in_after_missed_handoff(void)
{
    env e = env_start(30000);
    counted cp = {4000, 0};
    redislock_acquire_options ao = fair_opts(30000, 10000);
    int64_t t0;
    waiter a, b;

    ao.retry_fn = counted_pause;
    ao.retry_arg = &cp;
    waiter_start(&a, e.c, ao, -1);
    wait_second_pause(&cp);
    ASSERT_EQ_INT(th_cmd_int(e.r, "DEL " KEY), 1);
    t0 = th_now_us();
    waiter_start(&b, e.c, fair_opts(30000, 10000), -1);
    waiter_join(&a, 3000, REDISLOCK_OK);
    test_log("A in %lld ms after B began",
             (long long)((a.done_us - t0) / 1000));
    ASSERT_LT(a.done_us - t0, 300000);
    wait_queued(e.r, 1, NULL);
    ASSERT_OK(redislock_release(a.l));
    waiter_join(&b, 3000, REDISLOCK_OK);
    ASSERT_GT(redislock_fence(b.l), redislock_fence(a.l));
    ASSERT_OK(redislock_release(b.l));
    redislock_lock_free(a.l);
    redislock_lock_free(b.l);
    env_stop(&e);
}

/* A forked fair waiter on KEY (default TTL, 30 s), killed by the test. */
static pid_t spawn_fair_waiter(const th_server *s)
{
    redislock_acquire_options o = th_aopts(0, FOREVER, 0);
    redislock_client *c = NULL;
    redislock_lock *l = NULL;
    pid_t pid;

    fflush(NULL);
    pid = fork();
    ASSERT(pid >= 0);
    if (pid != 0)
        return pid;
    o.fair = 1;
    if (redislock_client_new(&c, s->unix_url, NULL) == REDISLOCK_OK &&
        redislock_lock_new(c, KEY, strlen(KEY), &l) == REDISLOCK_OK)
        redislock_acquire(l, &o);
    _exit(1);
}

void test_fair_dead_waiter_bounded(void)
{
    env e = env_start(30000);
    char tok1[TOKLEN], tok2[TOKLEN], *now;
    int64_t t_kill, t_rel, alive_left, got_after;
    waiter w2;
    pid_t pid;
    int st;

    pid = spawn_fair_waiter(e.s);
    wait_queued(e.r, 1, tok1);
    /* Bounded: if the dead waiter stalls it for its 30 s lease, EHELD. */
    waiter_start(&w2, e.c, fair_opts(30000, 15000), -1);
    wait_queued(e.r, 2, tok2);
    ASSERT_EQ_INT(kill(pid, SIGKILL), 0);
    t_kill = th_now_us();
    while (waitpid(pid, &st, 0) < 0)
        ASSERT_EQ_INT(errno, EINTR);
    alive_left = alive_left_ms(e.r, tok1);
    t_rel = th_now_us();
    ASSERT_OK(redislock_release(e.holder));
    now = th_cmd_str(e.r, NULL, "GET " KEY);
    test_log("release %lld ms after W1's SIGKILL, its alive key had %lld ms "
             "left: the release handed the lock to %s",
             (long long)(t_rel - t_kill) / 1000, (long long)alive_left,
             now && strcmp(now, tok1) == 0   ? "the dead W1"
             : now && strcmp(now, tok2) == 0 ? "W2 (W1 skipped)"
                                             : "nobody");
    th_join_within(w2.t, 20000);
    got_after = (w2.done_us - t_kill) / 1000;
    test_log("W2: %s %lld ms after W1's SIGKILL (alive window %d ms)",
             redislock_errname(w2.err), (long long)got_after, ALIVE_MS);
    if (w2.err != REDISLOCK_OK)
        test_fail_(__FILE__, __LINE__,
                   "W2 still waiting %lld ms after W1 died: %s; %s",
                   (long long)got_after, redislock_errname(w2.err), w2.detail);
    ASSERT_EQ_STR(w2.token, tok2);
    if (now != NULL && strcmp(now, tok1) == 0) {
        /* Not before W1 could have been alive, and not much after. */
        ASSERT_GE((w2.done_us - t_rel) / 1000, alive_left - 100);
        ASSERT_LE(got_after, ALIVE_MS + 1000);
    } else {
        ASSERT_LE((w2.done_us - t_rel) / 1000, SLACK_MS);
    }
    ASSERT_OK(redislock_release(w2.l));
    redislock_lock_free(w2.l);
    free(now);
    env_stop(&e);
}

/* The release of a fair holder that queued for its lock reads the queue
 * first and leaves its key for the hand-off to overwrite (release.lua's
 * 'q', lib.lua's rl_hand_head). A dead waiter at the head is skipped
 * there as by any release: the next live one gets the lock from the
 * release itself, and the dead one never holds it. D's alive time is put
 * in the past after its SIGKILL, so that it is dead at once, not when
 * its window ends. */
void test_fair_queued_release_skips_dead_head(void)
{
    env e = env_start(30000);
    char th[TOKLEN], td[TOKLEN], tw[TOKLEN], *now;
    waiter h, w;
    int64_t t_rel;
    pid_t pid;
    int st;

    waiter_start(&h, e.c, fair_opts(30000, FOREVER), -1);
    wait_queued(e.r, 1, th);
    ASSERT_OK(redislock_release(e.holder));
    waiter_join(&h, 3000, REDISLOCK_OK);
    ASSERT_EQ_STR(h.token, th);
    pid = spawn_fair_waiter(e.s);
    wait_queued(e.r, 1, td);
    waiter_start(&w, e.c, fair_opts(30000, FOREVER), -1);
    wait_queued(e.r, 2, tw);
    ASSERT_EQ_INT(kill(pid, SIGKILL), 0);
    while (waitpid(pid, &st, 0) < 0)
        ASSERT_EQ_INT(errno, EINTR);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EVAL %s 1 %s %s",
                             "local v = redis.call('HGET', KEYS[1], ARGV[1]) "
                             "return redis.call('HSET', KEYS[1], ARGV[1], "
                             "'1' .. string.sub(v, (string.find(v, ' ', 1, "
                             "true))))",
                             WAITERS, td),
                  0);
    /* Its entry still reads, its alive time 1 ms after the epoch. */
    ASSERT_EQ_INT(waiter_entry(e.r, td, NULL), 1);
    t_rel = th_now_us();
    ASSERT_OK(redislock_release(h.l));
    now = th_cmd_str(e.r, NULL, "GET " KEY);
    test_log("the release handed the lock to %s",
             now && strcmp(now, tw) == 0   ? "W (the dead D skipped)"
             : now && strcmp(now, td) == 0 ? "the dead D"
                                           : "nobody");
    ASSERT(now != NULL);
    ASSERT_EQ_STR(now, tw);
    waiter_join(&w, 3000, REDISLOCK_OK);
    ASSERT_EQ_STR(w.token, tw);
    ASSERT_LE((w.done_us - t_rel) / 1000, SLACK_MS);
    /* D is gone from the queue, and the key is W's alone. */
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " QUEUE), 0);
    ASSERT_EQ_INT(th_cmd_int(e.r, "HEXISTS " WAITERS " %s", td), 0);
    ASSERT_OK(redislock_release(w.l));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " KEY), 0);
    redislock_lock_free(h.l);
    redislock_lock_free(w.l);
    free(now);
    env_stop(&e);
}

void test_fair_timeout_leaves_queue(void)
{
    env e = env_start(10000);
    char tok[TOKLEN], *score;
    int64_t t0;
    waiter w;

    t0 = th_now_us();
    waiter_start(&w, e.c, fair_opts(30000, 500), -1);
    wait_queued(e.r, 1, tok);
    ASSERT_EQ_INT(th_cmd_int(e.r, "HEXISTS " WAITERS " %s", tok), 1);
    waiter_join(&w, 3000, REDISLOCK_EHELD);
    test_log("fair wait of 500 ms behind a 10 s holder: EHELD after %lld ms",
             (long long)(w.done_us - t0) / 1000);
    ASSERT_GE((w.done_us - t0) / 1000, 500 - 2);
    ASSERT_LE((w.done_us - t0) / 1000, 500 + SLACK_MS);
    score = th_cmd_str(e.r, NULL, "ZSCORE " QUEUE " %s", tok);
    ASSERT_EQ_STR(score, NULL);
    ASSERT_EQ_INT(th_cmd_int(e.r, "HEXISTS " WAITERS " %s", tok), 0);
    ASSERT_KEY(e.r, KEY, redislock_token(e.holder));
    redislock_lock_free(w.l);
    env_stop(&e);
}

/* The command the scripts go by in this build: FCALL, or EVALSHA in a
 * key-check build, which has no library. */
static const char *script_cmd(void)
{
    return rl__script_library[0] != '\0' ? "fcall" : "evalsha";
}

/* How many clients are blocked (flag b) in cmd: postponed by CLIENT
 * PAUSE in the middle of it. */
static int postponed(redisContext *r, const char *cmd)
{
    redisReply *rep = th_cmd(r, "CLIENT LIST");
    char want[64], *line, *save = NULL, *f;
    int found = 0;

    snprintf(want, sizeof want, " cmd=%s ", cmd);
    for (line = strtok_r(rep->str, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        f = strstr(line, " flags=");
        found += f != NULL && strstr(line, want) != NULL &&
                 memchr(f + 7, 'b', strcspn(f + 7, " ")) != NULL;
    }
    freeReplyObject(rep);
    return found;
}

/* Until n clients are postponed in cmd. */
static void wait_postponed(redisContext *r, const char *cmd, int n)
{
    int64_t deadline = th_now_ms() + SETUP_MS;

    while (postponed(r, cmd) < n && th_now_ms() < deadline)
        th_sleep_ms(2);
    if (postponed(r, cmd) < n)
        test_fail_(__FILE__, __LINE__, "not %d clients paused in %s", n, cmd);
}

/* CLIENT PAUSE WRITE while neither waiter is in the middle of an
 * attempt (its heartbeat, every 2 s): one caught in its FCALL would not
 * be listening for the cancel. Paused for long: the test unpauses. */
static void pause_waiting(redisContext *r)
{
    int i;

    for (i = 0; i < 100; i++) {
        freeReplyObject(th_cmd(r, "CLIENT PAUSE 30000 WRITE"));
        th_sleep_ms(5);
        if (!postponed(r, script_cmd()))
            return;
        freeReplyObject(th_cmd(r, "CLIENT UNPAUSE"));
        th_sleep_ms(20);
    }
    test_fail_(__FILE__, __LINE__, "a waiter was always in an attempt");
}

static void *cancel_thread(void *arg)
{
    redislock_cancel(arg);
    return NULL;
}

typedef struct releaser {
    redislock_lock *l;
    redislock_err err;
} releaser;

static void *release_thread(void *arg)
{
    releaser *r = arg;

    r->err = redislock_release(r->l);
    return NULL;
}

/*
 * The race of a cancel and a release, made deterministic with CLIENT PAUSE
 * WRITE: the release is postponed, then W1 hears of its cancel (at once,
 * on its private loop) and sends its leave, postponed behind the release.
 * So the release hands W1 the lock, and only then does W1's leave run,
 * which must pass the lock on to W2.
 */
void test_fair_leave_passes_handoff_on(void)
{
    env e = env_start_as(30000, 1);
    char tok1[TOKLEN], tok2[TOKLEN], set1[TOKLEN + 64], set2[TOKLEN + 64];
    pthread_t tc, tr;
    releaser rel;
    redisContext *m;
    mon_log *log = malloc(sizeof *log);
    int64_t t_go;
    waiter w1, w2;
    int i, i1, i2;

    ASSERT(log != NULL);
    waiter_start(&w1, e.c, fair_opts(30000, FOREVER), -1);
    wait_queued(e.r, 1, tok1);
    waiter_start(&w2, e.c, fair_opts(30000, 10000), -1);
    wait_queued(e.r, 2, tok2);
    wait_listening(e.r, 2);
    /* The scripts loaded: a "Function not found" (or a NOSCRIPT) and its
     * load after the unpause would let W1's leave run before the
     * release. */
    if (rl__script_library[0] != '\0')
        freeReplyObject(
            th_cmd_raw(e.r, "FUNCTION LOAD %s", rl__script_library));
    freeReplyObject(th_cmd(e.r, "SCRIPT LOAD %s", rl__script_release.source));
    freeReplyObject(th_cmd(e.r, "SCRIPT LOAD %s", rl__script_leave.source));
    m = mon_start(e.s);
    pause_waiting(e.r);
    rel.l = e.holder;
    ASSERT_EQ_INT(pthread_create(&tr, NULL, release_thread, &rel), 0);
    wait_postponed(e.r, script_cmd(), 1);
    ASSERT_EQ_INT(pthread_create(&tc, NULL, cancel_thread, w1.l), 0);
    wait_postponed(e.r, script_cmd(), 2);
    t_go = th_now_us();
    freeReplyObject(th_cmd(e.r, "CLIENT UNPAUSE"));
    th_join_within(tc, 3000);
    th_join_within(tr, 3000);
    ASSERT_ERR(rel.err, REDISLOCK_OK);
    waiter_join(&w1, 3000, REDISLOCK_ECANCELED);
    waiter_join(&w2, 3000, REDISLOCK_OK);
    mon_stop(m, e.r, log);
    snprintf(set1, sizeof set1, "\"SET\" \"%s\" \"%s\"", KEY, tok1);
    snprintf(set2, sizeof set2, "\"SET\" \"%s\" \"%s\"", KEY, tok2);
    i1 = mon_find(log, 1, set1);
    i2 = mon_find(log, 1, set2);
    test_log("W1 cancelled and handed the lock (monitor line %d), W2 got it "
             "(line %d) %lld us after the unpause",
             i1, i2, (long long)(w2.done_us - t_go));
    /* The release did hand W1 the lock, and W1's leave passed it on,
     * long before W1's 30 s lease would have run out. */
    for (i = 0; i1 < 0 && i < log->n; i++)
        test_log("%s", log->line[i]);
    ASSERT_GE(i1, 0);
    ASSERT_GT(i2, i1);
    ASSERT_LE((w2.done_us - t_go) / 1000, SLACK_MS);
    ASSERT_EQ_STR(w2.token, tok2);
    ASSERT_KEY(e.r, KEY, tok2);
    ASSERT_EQ_INT(redislock_holds(w1.l), 0);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " QUEUE), 0);
    ASSERT_EQ_INT(th_cmd_int(e.r, "HEXISTS " WAITERS " %s", tok1), 0);
    ASSERT_OK(redislock_release(w2.l));
    redislock_lock_free(w1.l);
    redislock_lock_free(w2.l);
    free(log);
    env_stop(&e);
}

/* Waits (bounded) until KEY's TTL is near ttl: a handed-over lease (at
 * most the 5 s alive window) has been extended to the waiter's TTL, which
 * the watchdog thread does a third of the way into it. */
static void extended(redisContext *r, int64_t ttl)
{
    int64_t deadline = th_now_us() + 3000000;

    while (th_pttl(r, KEY) < ttl - SLACK_MS && th_now_us() < deadline)
        th_sleep_ms(2);
    ASSERT_GT(th_pttl(r, KEY), ttl - SLACK_MS);
}

/* Asserts what redislock_inspect reads of KEY. */
static void assert_info(redislock_lock *reader, const char *owner,
                        const char *meta, int64_t holds, int64_t ttl)
{
    redislock_info info;

    ASSERT_OK(redislock_inspect(reader, &info));
    ASSERT_EQ_INT(info.held, 1);
    ASSERT_EQ_STR(info.owner, owner);
    ASSERT_EQ_STR(info.metadata, meta);
    ASSERT_EQ_INT(info.holds, holds);
    ASSERT_LE(info.ttl_ms, ttl);
    ASSERT_GT(info.ttl_ms, ttl - SLACK_MS);
}

void test_fair_metadata_handoff(void)
{
    env e = env_start(30000);
    redislock_lock *reader = th_lock(e.c, KEY);
    redislock_acquire_options oa = fair_opts(20000, FOREVER);
    redislock_acquire_options ob = fair_opts(15000, FOREVER);
    char toka[TOKLEN], tokb[TOKLEN], queued[TOKLEN], *type;
    waiter a, b;

    /* A: metadata, so a hash lock under a default owner id. */
    oa.metadata = "host=a job=42";
    waiter_start(&a, e.c, oa, -1);
    /* Queued by its request's id; the owner id is in its entry. */
    wait_queued(e.r, 1, queued);
    ASSERT_GT(waiter_entry(e.r, queued, toka), 0);
    ASSERT_OK(redislock_release(e.holder));
    waiter_join(&a, 3000, REDISLOCK_OK);
    ASSERT_EQ_STR(a.token, toka);
    type = th_cmd_str(e.r, NULL, "TYPE " KEY);
    ASSERT_EQ_STR(type, "hash");
    free(type);
    /* The hand-off grants at most the alive window; the client's
     * watchdog thread extends it to the TTL soon after. */
    extended(e.r, 20000);
    assert_info(reader, toka, "host=a job=42", 1, 20000);

    /* B: reentrant with metadata, queued behind A's hash lock. */
    ob.reentrant = 1;
    ob.metadata = "b";
    waiter_start(&b, e.c, ob, -1);
    wait_queued(e.r, 1, queued);
    ASSERT_GT(waiter_entry(e.r, queued, tokb), 0);
    ASSERT_OK(redislock_release(a.l));
    waiter_join(&b, 3000, REDISLOCK_OK);
    ASSERT_EQ_STR(b.token, tokb);
    test_log("handed over: A's owner %s, then B's %s", toka, tokb);
    extended(e.r, 15000);
    assert_info(reader, tokb, "b", 1, 15000);
    /* B takes it again: two holds, each needing its release. */
    ASSERT_OK(redislock_acquire(b.l, &ob));
    ASSERT_EQ_INT(redislock_holds(b.l), 2);
    assert_info(reader, tokb, "b", 2, 15000);
    ASSERT_OK(redislock_release(b.l));
    assert_info(reader, tokb, "b", 1, 15000);
    ASSERT_OK(redislock_release(b.l));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " KEY), 0);
    redislock_lock_free(a.l);
    redislock_lock_free(b.l);
    redislock_lock_free(reader);
    env_stop(&e);
}

/* A lock held under an owner id, without reentrant: a second handle
 * naming the same owner is another holder, fair or not. */
void test_fair_same_owner_not_reentrant(void)
{
    env e = env_start(0);
    redislock_lock *a = th_lock(e.c, KEY), *b = th_lock(e.c, KEY);
    redislock_lock *reader = th_lock(e.c, KEY);
    redislock_acquire_options o = th_aopts(20000, 0, 0);
    redislock_err plain, fair;

    o.owner = "job-owner";
    o.metadata = "first";
    ASSERT_OK(redislock_acquire(a, &o));
    o.metadata = "second";
    o.wait_ms = 300;
    plain = redislock_acquire(b, &o);
    o.fair = 1;
    fair = redislock_acquire(b, &o);
    test_log("same owner id, not reentrant, 300 ms wait: %s without fair, "
             "%s with fair",
             redislock_errname(plain), redislock_errname(fair));
    ASSERT_ERR(plain, REDISLOCK_EHELD);
    ASSERT_ERR(fair, REDISLOCK_EHELD);
    ASSERT_EQ_INT(redislock_holds(b), 0);
    /* Untouched by b: two 300 ms waits later, not refreshed. */
    assert_info(reader, "job-owner", "first", 1, 20000 - 2 * 300);
    ASSERT_OK(redislock_release(a));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " KEY), 0);
    redislock_lock_free(a);
    redislock_lock_free(b);
    redislock_lock_free(reader);
    env_stop(&e);
}

/*
 * Processes taking the lock in turn, fairly. Each records every
 * acquisition (its id, in the order taken) in shared memory, and does a
 * non-atomic GET/SET increment under the lock.
 */
#define NPROCS 8
#define NROUNDS 100
#define COUNTER "fq:counter"

typedef struct shared {
    _Atomic int ready, go, next;
    int rounds;
    int64_t ttl_ms;
    int who[NPROCS * NROUNDS];
} shared;

static const char *fair_rounds(redislock_lock *l, redisContext *r, shared *sh,
                               int id)
{
    redislock_acquire_options o = fair_opts(sh->ttl_ms, FOREVER);
    redisReply *rep;
    long long n;
    int i, at;

    for (i = 0; i < sh->rounds; i++) {
        if (redislock_acquire(l, &o) != REDISLOCK_OK)
            return "acquire";
        at = atomic_fetch_add(&sh->next, 1);
        if (at < NPROCS * NROUNDS)
            sh->who[at] = id;
        rep = redisCommand(r, "GET " COUNTER);
        if (rep == NULL ||
            (rep->type != REDIS_REPLY_NIL && rep->type != REDIS_REPLY_STRING))
            return "GET";
        n = rep->type == REDIS_REPLY_NIL ? 0 : strtoll(rep->str, NULL, 10);
        freeReplyObject(rep);
        rep = redisCommand(r, "SET " COUNTER " %lld", n + 1);
        if (rep == NULL || rep->type == REDIS_REPLY_ERROR)
            return "SET";
        freeReplyObject(rep);
        if (redislock_release(l) != REDISLOCK_OK)
            return "release";
    }
    return NULL;
}

static int fair_process(const th_server *s, shared *sh, int id)
{
    redislock_client *c = NULL;
    redislock_lock *l = NULL;
    redisContext *r = redisConnectUnix(s->sock);
    const char *err = "connect";
    int64_t deadline = th_now_ms() + SETUP_MS;

    atomic_fetch_add(&sh->ready, 1);
    while (!atomic_load(&sh->go) && th_now_ms() < deadline)
        th_sleep_ms(1);
    if (r != NULL && !r->err &&
        redislock_client_new(&c, s->unix_url, NULL) == REDISLOCK_OK &&
        redislock_lock_new(c, KEY, strlen(KEY), &l) == REDISLOCK_OK)
        err = fair_rounds(l, r, sh, id);
    if (err != NULL)
        fprintf(stderr, "process %d: %s: %s\n", id, err, redislock_errdetail());
    redislock_lock_free(l);
    redislock_client_free(c);
    if (r != NULL)
        redisFree(r);
    return err == NULL ? 0 : 1;
}

/* Reaps pid within ms, or kills it and fails the test. */
static void reap_within(pid_t pid, int64_t ms)
{
    int64_t deadline = th_now_ms() + ms;
    pid_t got;
    int st;

    while ((got = waitpid(pid, &st, WNOHANG)) == 0 && th_now_ms() < deadline)
        th_sleep_ms(10);
    if (got == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        test_fail_(__FILE__, __LINE__, "worker %d not done in %lld ms",
                   (int)pid, (long long)ms);
    }
    ASSERT_EQ_INT(got, pid);
    ASSERT(WIFEXITED(st));
    ASSERT_EQ_INT(WEXITSTATUS(st), 0);
}

/* Runs nprocs processes of rounds fair acquisitions with ttl_ms, started
 * together; checks the counter and returns the time they took. */
static int64_t run_processes(env *e, shared *sh, int nprocs, int rounds,
                             int64_t ttl_ms)
{
    int64_t t0, deadline;
    pid_t pids[NPROCS];
    char *v;
    int i;

    memset(sh, 0, sizeof *sh);
    sh->rounds = rounds;
    sh->ttl_ms = ttl_ms;
    fflush(NULL);
    for (i = 0; i < nprocs; i++) {
        pids[i] = fork();
        ASSERT(pids[i] >= 0);
        if (pids[i] == 0)
            _exit(fair_process(e->s, sh, i));
    }
    deadline = th_now_ms() + SETUP_MS;
    while (atomic_load(&sh->ready) < nprocs && th_now_ms() < deadline)
        th_sleep_ms(1);
    t0 = th_now_ms();
    atomic_store(&sh->go, 1);
    for (i = 0; i < nprocs; i++)
        reap_within(pids[i], 100000);
    ASSERT_EQ_INT(atomic_load(&sh->next), nprocs * rounds);
    v = th_cmd_str(e->r, NULL, "GET " COUNTER);
    ASSERT(v != NULL);
    ASSERT_EQ_INT(strtoll(v, NULL, 10), nprocs * rounds);
    free(v);
    return th_now_ms() - t0;
}

static shared *shared_new(void)
{
    shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    ASSERT(sh != MAP_FAILED);
    return sh;
}

void test_fair_holders_alternate(void)
{
    env e = env_start(0);
    shared *sh = shared_new();
    int total = NPROCS * NROUNDS, switches = 0, i;
    int64_t ms = run_processes(&e, sh, NPROCS, NROUNDS, 10000);

    for (i = 1; i < total; i++)
        switches += sh->who[i] != sh->who[i - 1];
    test_log("%d processes x %d fair acquisitions in %lld ms (%.0f/s); "
             "holder changed in %d of %d consecutive pairs (%.3f)",
             NPROCS, NROUNDS, (long long)ms, total * 1000.0 / (double)ms,
             switches, total - 1, switches / (double)(total - 1));
    ASSERT_GE(switches * 10, (total - 1) * 9);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS " KEY), 0);
    munmap(sh, sizeof *sh);
    env_stop(&e);
}

void test_fair_no_leftovers(void)
{
    env e = env_start(0);
    shared *sh = shared_new();
    int64_t ms = run_processes(&e, sh, 4, 25, 500), t_done, t_empty;
    long long n;

    t_done = th_now_ms();
    ASSERT_EQ_INT(th_cmd_int(e.r, "DEL " COUNTER), 1);
    test_log("keys left at the end: %lld", th_cmd_int(e.r, "DBSIZE"));

    while ((n = th_cmd_int(e.r, "DBSIZE")) != 0 &&
           th_now_ms() < t_done + ALIVE_MS + 1000)
        th_sleep_ms(10);
    t_empty = th_now_ms();
    test_log("4 processes x 25 fair cycles (TTL 500 ms) in %lld ms; "
             "DBSIZE 0 %lld ms after the last release",
             (long long)ms, (long long)(t_empty - t_done));
    ASSERT_EQ_INT(n, 0);
    munmap(sh, sizeof *sh);
    env_stop(&e);
}

/*
 * No subscription outlives its handle: the fair channel a loop kept for
 * its handle's next wait (test_fair_channel_kept_between_waits) is given
 * up when the handle is freed, though that loop is idle (the holder's
 * release ran on another of the client's loops, so which one the next
 * call takes depends on which call gave its loop back last), and the
 * client's next fair wait, whichever loop it takes, is handed the lock.
 */
void test_fair_freed_handle_unsubscribes(void)
{
    env e = env_start_as(30000, 1);
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    waiter w;
    int round;

    o.fair = 1;
    for (round = 0; round < 2; round++) {
        if (round > 0)
            ASSERT_OK(redislock_acquire(e.holder, &o));
        waiter_start(&w, e.c, fair_opts(30000, FOREVER), -1);
        wait_queued(e.r, 1, NULL);
        wait_listening(e.r, 1);
        ASSERT_OK(redislock_release(e.holder));
        waiter_join(&w, 3000, REDISLOCK_OK);
        ASSERT_OK(redislock_release(w.l));
        /* Kept for the handle's next wait. */
        ASSERT_EQ_INT(th_listening(e.r, BASE "c:*"), 1);
        redislock_lock_free(w.l);
        WAIT_FOR(th_listening(e.r, BASE "c:*") == 0, SETUP_MS);
    }
    env_stop(&e);
}

/* The waiter of test_fair_channel_kept_between_waits: each time it is let
 * go, one fair acquire of l (on this thread: the client's private loop
 * for its blocking calls) and its release. */
typedef struct again {
    pthread_t t;
    redislock_lock *l[4]; /* the handle of each wait */
    int n;
    atomic_int go, done;
    redislock_err err;
} again;

static void *again_thread(void *arg)
{
    again *g = arg;
    redislock_acquire_options o = fair_opts(10000, FOREVER);
    int i;

    for (i = 0; i < g->n; i++) {
        while (atomic_load(&g->go) <= i)
            th_sleep_ms(1);
        if ((g->err = redislock_acquire(g->l[i], &o)) != REDISLOCK_OK ||
            (g->err = redislock_release(g->l[i])) != REDISLOCK_OK)
            break;
        atomic_store(&g->done, i + 1);
    }
    atomic_store(&g->done, g->n);
    return NULL;
}

/*
 * A blocking call's fair channel stays subscribed for its handle's next
 * wait: three waits of one handle behind another client's holder cost
 * one SUBSCRIBE and no UNSUBSCRIBE (each wait used to subscribe, try
 * again once subscribed, and unsubscribe), and each is handed the lock.
 * A loop keeps one such channel at most: a fourth wait by another handle
 * on the same thread leaves one channel listening, its own.
 */
void test_fair_channel_kept_between_waits(void)
{
    env e = env_start_as(0, 1);
    redislock_client *c2 = th_client(e.s);
    redislock_lock *h = th_lock(c2, KEY), *a = th_lock(e.c, KEY),
                   *b = th_lock(e.c, KEY);
    redislock_acquire_options ho = fair_opts(10000, FOREVER);
    again g = {.l = {a, a, a, b}, .n = 4};
    th_cmdstats *st = malloc(sizeof *st);
    long long sub0, unsub0;
    int i;

    ASSERT(st != NULL);
    th_cmdstats_read(e.r, st);
    sub0 = th_cmdstats_calls(st, "subscribe");
    unsub0 = th_cmdstats_calls(st, "unsubscribe");
    ASSERT_EQ_INT(pthread_create(&g.t, NULL, again_thread, &g), 0);
    for (i = 0; i < g.n; i++) {
        ASSERT_OK(redislock_acquire(h, &ho));
        atomic_store(&g.go, i + 1);
        wait_queued(e.r, 1, NULL);
        ASSERT_OK(redislock_release(h));
        WAIT_FOR(atomic_load(&g.done) > i, SETUP_MS);
        ASSERT_OK(g.err);
        if (i == 2) {
            th_cmdstats_read(e.r, st);
            test_log("three waits of one handle: %lld SUBSCRIBE, %lld "
                     "UNSUBSCRIBE",
                     th_cmdstats_calls(st, "subscribe") - sub0,
                     th_cmdstats_calls(st, "unsubscribe") - unsub0);
            ASSERT_EQ_INT(th_cmdstats_calls(st, "subscribe") - sub0, 1);
            ASSERT_EQ_INT(th_cmdstats_calls(st, "unsubscribe") - unsub0, 0);
            ASSERT_EQ_INT(th_listening(e.r, BASE "c:*"), 1);
        }
    }
    th_join_within(g.t, SETUP_MS);
    ASSERT_OK(g.err);
    /* b's wait dropped a's channel: one listening, b's. */
    WAIT_FOR(th_listening(e.r, BASE "c:*") == 1, SETUP_MS);
    th_cmdstats_read(e.r, st);
    ASSERT_EQ_INT(th_cmdstats_calls(st, "subscribe") - sub0, 2);
    ASSERT_EQ_INT(th_cmdstats_calls(st, "unsubscribe") - unsub0, 1);
    free(st);
    redislock_lock_free(a);
    redislock_lock_free(b);
    redislock_lock_free(h);
    redislock_client_free(c2);
    env_stop(&e);
}
