/*
 * ghost: an acquire whose request is held up in the network. The client
 * gives up (ETIMEDOUT) and reports failure, but the request is still on
 * its way and takes the lock when it arrives: a lock nobody knows it
 * holds. The client's watchdog thread voids the token (abandon.lua) until
 * the server answers, so the ghost lives only until the first abandon
 * arrives, and an acquire that arrives after the abandon takes nothing.
 *
 * The client talks to the server through a proxy (harness/proxy.h) that
 * holds client-to-server bytes back; a second connection, straight to the
 * server, polls the lock key every few ms.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/fixture.h"
#include "harness/proxy.h"
#include "harness/server.h"
#include "harness/util.h"
#include "script.h"
#include "test.h"

#define KEY "locks:g"
#define VOID_PATTERN KEY "{" KEY "}:rl-void:*"
#define TTL_MS 5000
#define COMMAND_TIMEOUT_MS 200
#define NET_DELAY_MS 1000
/* How long the key is watched after the acquire is sent. */
#define WATCH_MS 3000
/* The watchdog's abandon: one try waits 100 ms for its answer, the next
 * starts 50 ms later (watchdog.c); then a connect and a round trip.
 * Generous for ASan on a busy box. */
#define ABANDON_BOUND_MS 400

typedef struct ghost {
    th_server *s;
    redisContext *r; /* straight to the server */
    th_proxy *p;
    redislock_client *c; /* through the proxy */
    redislock_lock *l;
} ghost;

/* A client through the proxy that has acquired and released before, so
 * that the server has those scripts. load_abandon: the server has the
 * abandon script too (as after an earlier abandon); without it, the first
 * abandon is answered NOSCRIPT and has to send the script again. */
static ghost ghost_start(int load_abandon)
{
    redislock_options o = {0};
    redislock_acquire_options a = th_aopts(TTL_MS, 0, 0);
    char url[64];
    redisReply *rep;
    ghost g;

    g.s = th_server_start(NULL);
    g.r = th_server_redis(g.s);
    g.p = th_proxy_start(g.s->port);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", th_proxy_port(g.p));
    o.command_timeout_ms = COMMAND_TIMEOUT_MS;
    g.c = th_client_url(url, &o);
    g.l = th_lock(g.c, KEY);
    ASSERT_OK(redislock_acquire(g.l, &a));
    ASSERT_OK(redislock_release(g.l));
    if (load_abandon) {
        rep = th_cmd(g.r, "SCRIPT LOAD %s", rl__script_abandon.source);
        ASSERT_EQ_STR(rep->str, rl__script_abandon.sha1);
        freeReplyObject(rep);
    }
    return g;
}

static void ghost_stop(ghost *g)
{
    redislock_lock_free(g->l);
    redislock_client_free(g->c);
    th_proxy_stop(g->p);
    redisFree(g->r);
    th_server_stop(g->s);
}

/* A try-once acquire whose request the proxy holds for NET_DELAY_MS: it
 * must fail with ETIMEDOUT and leave the handle holding nothing. Returns
 * when it was sent. */
static int64_t lost_acquire(ghost *g)
{
    redislock_acquire_options a = th_aopts(TTL_MS, 0, 0);
    int64_t t0, took;
    redislock_err e;

    th_proxy_set_delay(g->p, NET_DELAY_MS);
    t0 = th_now_ms();
    e = redislock_acquire(g->l, &a);
    took = th_now_ms() - t0;
    test_log("acquire returned %s after %lld ms", redislock_errname(e),
             (long long)took);
    ASSERT_ERR(e, REDISLOCK_ETIMEDOUT);
    ASSERT(took < NET_DELAY_MS);
    ASSERT(redislock_token(g->l) == NULL);
    ASSERT_EQ_INT(redislock_holds(g->l), 0);
    return t0;
}

/* What the poll of the key saw, in ms since the acquire was sent. */
typedef struct sighting {
    int64_t first, last; /* -1: never seen */
    int64_t undelayed;   /* when the proxy stopped delaying; -1: never */
    int intervals;       /* separate stretches it existed in */
    char value[80];      /* the value it had (the token) */
} sighting;

/* Polls KEY until t0 + WATCH_MS. undelay_on_sight: stop the proxy's
 * delay when the key first shows up; undelay_at > 0: at that time. */
static void watch_key(ghost *g, int64_t t0, int undelay_on_sight,
                      int64_t undelay_at, sighting *w)
{
    int was = 0;
    int64_t now;

    memset(w, 0, sizeof *w);
    w->first = w->last = w->undelayed = -1;
    while ((now = th_now_ms() - t0) < WATCH_MS) {
        char *v = th_cmd_str(g->r, NULL, "GET %s", KEY);
        int seen = v != NULL;

        if (seen) {
            if (w->first < 0)
                w->first = now;
            w->intervals += !was;
            w->last = now;
            if (strcmp(v, w->value) != 0 && w->value[0] != '\0')
                test_fail_(__FILE__, __LINE__, "%s held by %s, then %s", KEY,
                           w->value, v);
            snprintf(w->value, sizeof w->value, "%s", v);
            free(v);
        }
        was = seen;
        if (w->undelayed < 0 && ((undelay_on_sight && seen) ||
                                 (undelay_at > 0 && now >= undelay_at))) {
            th_proxy_set_delay(g->p, 0);
            w->undelayed = now;
        }
        th_sleep_ms(2);
    }
}

/* The one void marker of the lost acquire: its token in *token (the
 * marker's name ends with it), and a TTL of about TTL_MS + 60 s. */
static void assert_void(ghost *g, char *token, size_t size)
{
    redisReply *rep = th_cmd(g->r, "KEYS %s", VOID_PATTERN);
    const char *name;
    long long ttl;

    ASSERT_EQ_INT(rep->elements, 1);
    name = rep->element[0]->str;
    snprintf(token, size, "%s", name + strlen(VOID_PATTERN) - 1);
    ttl = th_cmd_int(g->r, "PTTL %s", name);
    test_log("void marker %s: TTL %lld ms", name, ttl);
    ASSERT_GT(ttl, TTL_MS + 60000 - 5000);
    ASSERT_LE(ttl, TTL_MS + 60000);
    freeReplyObject(rep);
}

static void log_proxy(ghost *g, int64_t t0)
{
    th_proxy_stats st;

    th_proxy_stats_get(g->p, &st);
    test_log("proxy: %ld connections, %ld chunks held, %ld forwarded, the "
             "last %lld ms after the acquire was sent",
             st.accepted, st.held, st.held_forwarded,
             st.last_held_forward_ms ? (long long)(st.last_held_forward_ms - t0)
                                     : -1LL);
}

/* Waits, up to ms, until the proxy has forwarded every chunk it held. */
static void all_forwarded(ghost *g, int64_t ms)
{
    int64_t deadline = th_now_ms() + ms;
    th_proxy_stats st;

    do {
        th_sleep_ms(5);
        th_proxy_stats_get(g->p, &st);
    } while (st.held_forwarded < st.held && th_now_ms() < deadline);
    ASSERT_EQ_INT(st.held_forwarded, st.held);
}

/* The ghost arrives ~1 s late and takes the lock; the proxy then
 * forwards normally again, and the next abandon frees it at once. */
void test_ghost_acquire_freed_after_delay(void)
{
    ghost g = ghost_start(1);
    char token[80];
    sighting w;
    int64_t t0 = lost_acquire(&g);

    watch_key(&g, t0, 1, 0, &w);
    log_proxy(&g, t0);
    test_log("ghost lock: seen from %lld to %lld ms (lived %lld ms); "
             "undelayed at %lld ms, gone %lld ms later",
             (long long)w.first, (long long)w.last,
             (long long)(w.last - w.first), (long long)w.undelayed,
             (long long)(w.last - w.undelayed));
    /* The request did arrive late and take the lock... */
    ASSERT_GE(w.first, NET_DELAY_MS - 50);
    ASSERT_EQ_INT(w.intervals, 1);
    /* ...for no longer than an abandon takes once the network is back. */
    ASSERT_LE(w.last - w.undelayed, ABANDON_BOUND_MS);
    ASSERT_EQ_INT(th_cmd_int(g.r, "EXISTS %s", KEY), 0);
    assert_void(&g, token, sizeof token);
    ASSERT_EQ_STR(w.value, token);
    ASSERT(redislock_check(g.l) != REDISLOCK_OK);
    ghost_stop(&g);
}

/* The abandons are held up as long as the acquire: the acquire arrives
 * first and takes the lock, the first abandon (sent when the acquire
 * timed out) frees it about a command timeout later. */
static void arrives_before_abandon(int load_abandon)
{
    ghost g = ghost_start(load_abandon);
    char token[80];
    sighting w;
    int64_t t0 = lost_acquire(&g);

    watch_key(&g, t0, 0, WATCH_MS - 500, &w);
    log_proxy(&g, t0);
    test_log("ghost lock: seen from %lld to %lld ms (lived %lld ms); the "
             "network was slow until %lld ms",
             (long long)w.first, (long long)w.last,
             (long long)(w.last - w.first), (long long)w.undelayed);
    ASSERT_GE(w.first, NET_DELAY_MS - 50);
    ASSERT_EQ_INT(w.intervals, 1);
    ASSERT_LE(w.last - w.first, COMMAND_TIMEOUT_MS + ABANDON_BOUND_MS);
    ASSERT_LT(w.last, w.undelayed);
    ASSERT_EQ_INT(th_cmd_int(g.r, "EXISTS %s", KEY), 0);
    assert_void(&g, token, sizeof token);
    ASSERT_EQ_STR(w.value, token);
    ghost_stop(&g);
}

void test_ghost_arrives_before_abandon(void)
{
    arrives_before_abandon(1);
}

/* The same on a server that has never run an abandon: each abandon held
 * up in the network is answered NOSCRIPT, after its sender has given up
 * on it (and so never sends the script). */
void test_ghost_abandon_script_not_cached(void)
{
    arrives_before_abandon(0);
}

/* Only the acquire is held up: the abandon gets through at once and voids
 * the token, and the acquire, arriving later, takes nothing. */
void test_ghost_arrives_after_abandon(void)
{
    ghost g = ghost_start(1);
    /* The acquire is an FCALL, the abandon an EVAL (sent whole). */
    long long calls0 = th_script_calls(g.r);
    char token[80];
    th_proxy_stats st;
    sighting w;
    int64_t t0 = lost_acquire(&g), voided = -1;
    redisReply *rep;

    th_proxy_set_delay(g.p, 0);
    /* The void marker is there well before the acquire arrives. */
    while (voided < 0 && th_now_ms() - t0 < NET_DELAY_MS) {
        rep = th_cmd(g.r, "KEYS %s", VOID_PATTERN);
        if (rep->elements > 0)
            voided = th_now_ms() - t0;
        freeReplyObject(rep);
        th_sleep_ms(2);
    }
    test_log("void marker set %lld ms after the acquire was sent",
             (long long)voided);
    ASSERT_GE(voided, 0);
    watch_key(&g, t0, 0, 0, &w);
    log_proxy(&g, t0);
    th_proxy_stats_get(g.p, &st);
    /* The acquire did reach the server, ~1 s late, and ran... */
    ASSERT_GE(st.held_forwarded, 1);
    ASSERT_GE(st.last_held_forward_ms - t0, NET_DELAY_MS - 50);
    ASSERT_GT(st.last_held_forward_ms - t0, voided);
    ASSERT_GE(th_script_calls(g.r) - calls0, 2);
    /* ...and took nothing. */
    test_log("lock key seen: %s", w.first < 0 ? "never" : "yes");
    ASSERT_EQ_INT(w.first, -1);
    assert_void(&g, token, sizeof token);
    ghost_stop(&g);
}

/* The proxy itself: a held request is answered after the delay, one sent
 * once the delay is lifted at once. */
void test_ghost_proxy_delays_requests(void)
{
    th_server *s = th_server_start(NULL);
    th_proxy *p = th_proxy_start(s->port);
    struct timeval tv = {5, 0};
    redisContext *c =
        redisConnectWithTimeout("127.0.0.1", th_proxy_port(p), tv);
    int64_t t0, took;
    redisReply *rep;

    ASSERT(c != NULL && c->err == 0);
    th_proxy_set_delay(p, 300);
    t0 = th_now_ms();
    rep = th_cmd(c, "PING");
    took = th_now_ms() - t0;
    freeReplyObject(rep);
    test_log("PING held for 300 ms took %lld ms", (long long)took);
    ASSERT_GE(took, 300);
    ASSERT_LT(took, 1000);
    th_proxy_set_delay(p, 0);
    t0 = th_now_ms();
    freeReplyObject(th_cmd(c, "PING"));
    ASSERT_LT(th_now_ms() - t0, 100);
    redisFree(c);
    th_proxy_stop(p);
    th_server_stop(s);
}

/* The ghost is there; then the server is busy with a slow script when
 * the abandons reach it, and answers BUSY (REDISLOCK_ETRYLATER) until the
 * script is killed. The watchdog keeps trying through that, as through a
 * network outage, and frees the ghost once the server serves again, long
 * before the lock's TTL would. */
void test_ghost_abandon_retried_while_busy(void)
{
    ghost g = ghost_start(1);
    redisContext *busy;
    redisReply *rep;
    int64_t t0, deadline, killed, gone = -1;
    int done = 0;

    freeReplyObject(th_cmd(g.r, "CONFIG SET busy-reply-threshold 100"));
    busy = th_server_redis(g.s);
    t0 = lost_acquire(&g);
    deadline = t0 + WATCH_MS;
    while (th_cmd_int(g.r, "EXISTS %s", KEY) == 0 && th_now_ms() < deadline)
        th_sleep_ms(1);
    ASSERT_EQ_INT(th_cmd_int(g.r, "EXISTS %s", KEY), 1);
    /* The abandons sent so far are still held back: they arrive to a
     * script that never ends, and those sent from now on as well. */
    ASSERT(redisAppendCommand(busy, "EVAL %s 0", "while true do end") ==
           REDIS_OK);
    while (!done)
        ASSERT(redisBufferWrite(busy, &done) == REDIS_OK);
    th_proxy_set_delay(g.p, 0);
    /* Every held-back abandon has reached the server (and been told
     * BUSY), and more have been tried straight. */
    all_forwarded(&g, 5000);
    th_sleep_ms(300);
    rep = th_cmd(g.r, "SCRIPT KILL");
    ASSERT(rep->type == REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    killed = th_now_ms();
    ASSERT(redisGetReply(busy, (void **)&rep) == REDIS_OK);
    ASSERT(rep->type == REDIS_REPLY_ERROR);
    freeReplyObject(rep);
    test_log("ghost seen, server busy for %lld ms after the acquire",
             (long long)(killed - t0));
    /* The lock's TTL is 5 s from the ghost's arrival, ~1 s after t0. */
    ASSERT_LT(killed - t0, NET_DELAY_MS + TTL_MS - 2000);
    while (th_now_ms() - killed < 1000) {
        if (th_cmd_int(g.r, "EXISTS %s", KEY) == 0) {
            gone = th_now_ms() - killed;
            break;
        }
        th_sleep_ms(2);
    }
    test_log("ghost freed %lld ms after the script was killed",
             (long long)gone);
    ASSERT_GE(gone, 0);
    redisFree(busy);
    ghost_stop(&g);
}

/* Lifts the proxy's delay at a time, from a thread of its own. */
typedef struct undelay {
    th_proxy *p;
    int64_t at_ms;
} undelay;

static void *undelay_main(void *arg)
{
    undelay *u = arg;
    int64_t left = u->at_ms - th_now_ms();

    if (left > 0)
        th_sleep_ms(left);
    th_proxy_set_delay(u->p, 0);
    return NULL;
}

/*
 * An owner's acquire is held up past its timeout, and the client is freed
 * at once, while the watchdog thread's first abandon is under way (held
 * up too); the network is slow until 500 ms. Freeing waits, bounded by a
 * connect and a command timeout, until the abandon has voided the
 * request, so that the owner's next acquire cannot meet the ghost: were
 * the abandon still on its way, it would find the next acquire's request
 * named in the hash rather than the ghost's, and leave the owner two
 * holds, one of which no release frees.
 */
void test_ghost_client_freed_while_abandoning(void)
{
    ghost g = ghost_start(1);
    redislock_acquire_options a = th_aopts(TTL_MS, 0, 0);
    redislock_client *c2;
    redislock_lock *l2;
    th_proxy_stats st;
    undelay u;
    pthread_t th;
    int64_t t0, deadline, freed;
    long accepted;

    a.owner = "o1";
    a.reentrant = 1;
    th_proxy_set_delay(g.p, NET_DELAY_MS);
    t0 = th_now_ms();
    ASSERT_ERR(redislock_acquire(g.l, &a), REDISLOCK_ETIMEDOUT);
    th_proxy_stats_get(g.p, &st);
    accepted = st.accepted;
    /* The abandon's first try is in flight once it has a connection. */
    deadline = th_now_ms() + 1000;
    do {
        th_sleep_ms(1);
        th_proxy_stats_get(g.p, &st);
    } while (st.accepted == accepted && th_now_ms() < deadline);
    ASSERT_GT(st.accepted, accepted);
    u.p = g.p;
    u.at_ms = t0 + 500;
    ASSERT_EQ_INT(pthread_create(&th, NULL, undelay_main, &u), 0);
    redislock_lock_free(g.l);
    g.l = NULL;
    freed = th_now_ms();
    redislock_client_free(g.c);
    g.c = NULL;
    freed = th_now_ms() - freed;
    test_log("freeing took %lld ms, until %lld ms after the acquire",
             (long long)freed, (long long)(th_now_ms() - t0));
    /* The request is void before freeing ends... */
    ASSERT_EQ_INT(th_cmd_int(g.r, "EVAL %s 0 %s",
                             "return #redis.call('KEYS', ARGV[1])",
                             VOID_PATTERN),
                  1);
    ASSERT_EQ_INT(pthread_join(th, NULL), 0);
    /* ...so the owner's next acquire is the one hold, ghost or not. */
    c2 = th_client(g.s);
    l2 = th_lock(c2, KEY);
    ASSERT_OK(redislock_acquire(l2, &a));
    all_forwarded(&g, 3000);
    log_proxy(&g, t0);
    ASSERT_OK(redislock_release(l2));
    ASSERT_EQ_INT(th_cmd_int(g.r, "EXISTS %s", KEY), 0);
    redislock_lock_free(l2);
    redislock_client_free(c2);
    ghost_stop(&g);
}
