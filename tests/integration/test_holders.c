/*
 * Regressions for the ways a lock was found held twice (issue 11): a
 * holder's validity must never outlast the lease the server has, however
 * the lock was granted (a fair hand-off picked up by an attempt or by
 * BLPOP, early or late; a re-entry or extend by another handle of the same
 * owner; an extend whose reply was lost), a stale hand-off is never a
 * grant, and an acquire whose reply was lost leaves no lock behind, in any
 * format, even when the process exits at once.
 *
 * "Truthful" below: the server's PTTL, read first, is at least the
 * validity the handle reports, read after it (the validity can only have
 * shrunk in between, and both are whole milliseconds).
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/adapters.h"
#include "harness/fakeserver.h"
#include "harness/fixture.h"
#include "harness/proxy.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

/* Fails unless the server's lease on key covers l's validity. The
 * validity is read after the lease (it only shrinks meanwhile), unless a
 * renewal by the watchdog thread raised both in between: then again. */
#define ASSERT_TRUTHFUL(r, key, l) assert_truthful_at_(__LINE__, r, key, l)
static void assert_truthful_at_(int line, redisContext *r, const char *key,
                                const redislock_lock *l)
{
    long long pttl;
    int64_t before, valid;
    int tries = 0;

    do {
        before = redislock_valid_ms(l);
        pttl = th_pttl(r, key);
        valid = redislock_valid_ms(l);
    } while (valid > before && ++tries < 5);

    if (valid > 0 && (pttl == -2 || (pttl >= 0 && valid > pttl + 1)))
        test_fail_(__FILE__, line,
                   "%s: the handle counts %lld ms of validity, the server's "
                   "lease has %lld ms",
                   key, (long long)valid, pttl);
}

/* Waits for child pid at most ms; returns its exit code (signals fail). */
static int join_child(pid_t pid, int64_t ms)
{
    int64_t end = th_now_ms() + ms;
    int st;

    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            break;
        ASSERT_EQ_INT(r, 0);
        if (th_now_ms() >= end) {
            kill(pid, SIGKILL);
            test_fail_(__FILE__, __LINE__,
                       "child %d still running after "
                       "%lld ms",
                       (int)pid, (long long)ms);
        }
        th_sleep_ms(5);
    }
    ASSERT(WIFEXITED(st));
    return WEXITSTATUS(st);
}

/* One fair hand-off: a holder releases after release_ms while a fair
 * waiter (TTL ttl, retry delay retry or the default) waits. */
typedef struct handoff_case {
    int64_t ttl, retry, release_ms;
} handoff_case;

typedef struct delayed {
    redislock_lock *l;
    int64_t ms;
} delayed;

static void *release_later(void *arg)
{
    delayed *d = arg;

    th_sleep_ms(d->ms);
    ASSERT_OK(redislock_release(d->l));
    return NULL;
}

static void handoff_child(const th_server *s, const char *key,
                          const handoff_case *hc)
{
    redislock_client *c = th_client(s);
    redisContext *r = th_server_redis(s);
    redislock_lock *h = th_lock(c, key), *w = th_lock(c, key);
    redislock_acquire_options ho = th_aopts(10000, 0, 0);
    redislock_acquire_options wo = th_aopts(hc->ttl, 6000, hc->retry);
    delayed d = {h, hc->release_ms};
    pthread_t t;

    wo.fair = 1;
    ASSERT_OK(redislock_acquire(h, &ho));
    ASSERT_EQ_INT(pthread_create(&t, NULL, release_later, &d), 0);
    ASSERT_OK(redislock_acquire(w, &wo));
    ASSERT_TRUTHFUL(r, key, w);
    ASSERT_GT(redislock_valid_ms(w), 0);
    th_join_within(t, 3000);
    ASSERT_OK(redislock_release(w));
    redislock_lock_free(h);
    redislock_lock_free(w);
    redislock_client_free(c);
    redisFree(r);
}

/* Fair hand-offs picked up by BLPOP (default pauses, early and around the
 * 2 s heartbeat, when the BLPOP times out) and by the waiter's own attempt
 * (retry delays of 100 and 300 ms, which sleep instead of blocking), with
 * TTLs above the 5 s alive window (the hand-off lease is shorter) and at
 * 1 s (the lease is the TTL, started at the hand-off). */
void test_holders_fair_handoff_truthful(void)
{
    static const handoff_case cases[] = {
        {8000, 0, 300},    {8000, 0, 1950},   {8000, 0, 2000},
        {8000, 0, 2060},   {8000, 0, 2150},   {3000, 0, 2100},
        {8000, 100, 300},  {8000, 100, 777},  {8000, 100, 2050},
        {1000, 300, 150},  {1000, 300, 420},  {1000, 300, 650},
        {1000, 300, 1990}, {8000, 300, 1000}, {8000, 300, 2100}};
    size_t n = sizeof cases / sizeof *cases, i;
    th_server *s = th_server_start(NULL);
    pid_t pids[sizeof cases / sizeof *cases];
    char key[32];

    for (i = 0; i < n; i++) {
        snprintf(key, sizeof key, "ho:fair:%zu", i);
        if ((pids[i] = fork()) == 0) {
            handoff_child(s, key, &cases[i]);
            _exit(0);
        }
        ASSERT_GT(pids[i], 0);
    }
    for (i = 0; i < n; i++) {
        int rc = join_child(pids[i], 20000);
        if (rc != 0)
            test_fail_(__FILE__, __LINE__,
                       "case %zu (TTL %lld, retry %lld, release at %lld ms) "
                       "failed",
                       i, (long long)cases[i].ttl, (long long)cases[i].retry,
                       (long long)cases[i].release_ms);
    }
    th_server_stop(s);
}

/* A fair waiter stopped while the lock is handed to it misses the lease;
 * another client takes the lock; when the waiter runs again, the hand-off
 * it finds (already popped into its socket, or still in its list) is no
 * grant: it keeps waiting and gives up while the other client holds. */
void test_holders_stale_handoff_not_granted(void)
{
    th_env e = th_env_start();
    redislock_lock *h = th_lock(e.c, "ho:stale"), *x = th_lock(e.c, "ho:stale");
    redislock_acquire_options ho = th_aopts(10000, 0, 0);
    redislock_acquire_options xo = th_aopts(30000, 0, 0);
    pid_t w;
    int rc;

    ASSERT_OK(redislock_acquire(h, &ho));
    if ((w = fork()) == 0) {
        redislock_client *c = th_client(e.s);
        redislock_lock *l = th_lock(c, "ho:stale");
        redislock_acquire_options o = th_aopts(10000, 9000, 0);
        redislock_err err;
        o.fair = 1;
        err = redislock_acquire(l, &o);
        if (err != REDISLOCK_EHELD && err != REDISLOCK_OK)
            test_log("waiter: %s: %s", redislock_errname(err),
                     redislock_errdetail());
        _exit(err == REDISLOCK_EHELD ? 0 : err == REDISLOCK_OK ? 1 : 2);
    }
    ASSERT_GT(w, 0);
    WAIT_FOR(th_cmd_int(e.r, "ZCARD %s", "ho:stale{ho:stale}:rl-q") == 1, 3000);
    WAIT_FOR(th_listening(e.r, "ho:stale{ho:stale}:rl-c:*") >= 1, 3000);
    ASSERT_EQ_INT(kill(w, SIGSTOP), 0);
    ASSERT_OK(redislock_release(h));
    /* The hand-off lease (at most the 5 s alive window) runs out. */
    ASSERT(th_wait_key_gone(e.r, "ho:stale", 8, 6000));
    ASSERT_OK(redislock_acquire(x, &xo));
    ASSERT_EQ_INT(kill(w, SIGCONT), 0);
    rc = join_child(w, 8000);
    ASSERT_OK(redislock_check(x));
    ASSERT_KEY(e.r, "ho:stale", redislock_token(x));
    ASSERT_EQ_INT(rc, 0);
    ASSERT_OK(redislock_release(x));
    redislock_lock_free(h);
    redislock_lock_free(x);
    th_env_stop(&e);
}

/* A fair waiter stopped, while it waits on its channel, for longer than
 * its pause (2 s), during which the lock is handed to it: the hand-off
 * came in time, and is in its socket when it runs again; it reads it
 * though its pause has run out meanwhile, and holds the lock. Its
 * claim of the hand-off is a request like any: a command timeout of
 * 200 ms failed it once in a suite at -j3 (2026-12-04), so 1.5 s. */
void test_holders_stopped_waiter_reads_late_reply(void)
{
    th_env e = th_env_start();
    redislock_lock *h = th_lock(e.c, "ho:late");
    redislock_acquire_options ho = th_aopts(10000, 0, 0);
    pid_t w;

    ASSERT_OK(redislock_acquire(h, &ho));
    if ((w = fork()) == 0) {
        redislock_options co = {0};
        redislock_client *c;
        redislock_lock *l;
        redislock_acquire_options o = th_aopts(10000, 9000, 0);
        redislock_err err;

        co.command_timeout_ms = 1500;
        c = th_client_url(e.s->unix_url, &co);
        l = th_lock(c, "ho:late");
        o.fair = 1;
        err = redislock_acquire(l, &o);
        if (err != REDISLOCK_OK)
            test_log("waiter: %s: %s", redislock_errname(err),
                     redislock_errdetail());
        _exit(err == REDISLOCK_OK ? 0 : 1);
    }
    ASSERT_GT(w, 0);
    WAIT_FOR(th_cmd_int(e.r, "ZCARD %s", "ho:late{ho:late}:rl-q") == 1, 3000);
    WAIT_FOR(th_listening(e.r, "ho:late{ho:late}:rl-c:*") >= 1, 3000);
    ASSERT_EQ_INT(kill(w, SIGSTOP), 0);
    ASSERT_OK(redislock_release(h));
    /* Past the waiter's pause (a 2 s wait on its channel), but not the
     * hand-off's lease (the 5 s alive window). */
    th_sleep_ms(2500);
    ASSERT_EQ_INT(kill(w, SIGCONT), 0);
    ASSERT_EQ_INT(join_child(w, 8000), 0);
    redislock_lock_free(h);
    th_env_stop(&e);
}

/* Two handles of one owner id: a re-entry, an extend or a watchdog's
 * renewals with a shorter TTL by one never cut short the lease the other
 * counts on, and a third client cannot take the lock meanwhile. */
void test_holders_shared_owner_shorter_ttl(void)
{
    th_env e = th_env_start();
    redislock_lock *a = th_lock(e.c, "ho:own"), *b = th_lock(e.c, "ho:own");
    redislock_lock *c = th_lock(e.c, "ho:own");
    redislock_acquire_options ao = th_aopts(10000, 0, 0);
    redislock_acquire_options bo = th_aopts(500, 0, 0);
    redislock_acquire_options co = th_aopts(10000, 1200, 0);

    ao.owner = bo.owner = "svc-1";
    ao.reentrant = bo.reentrant = 1;
    ASSERT_OK(redislock_acquire(a, &ao));
    ASSERT_OK(redislock_acquire(b, &bo));
    ASSERT_TRUTHFUL(e.r, "ho:own", a);
    ASSERT_TRUTHFUL(e.r, "ho:own", b);
    ASSERT_OK(redislock_extend(b, 300));
    ASSERT_TRUTHFUL(e.r, "ho:own", a);
    ASSERT_OK(redislock_release(b));
    bo.ttl_ms = 300;
    bo.watchdog = 1;
    ASSERT_OK(redislock_acquire(b, &bo));
    ASSERT_ERR(redislock_acquire(c, &co), REDISLOCK_EHELD);
    ASSERT_OK(redislock_check(a));
    ASSERT_OK(redislock_check(b));
    ASSERT_TRUTHFUL(e.r, "ho:own", a);
    ASSERT_TRUTHFUL(e.r, "ho:own", b);
    ASSERT_OK(redislock_release(b));
    ASSERT_OK(redislock_release(a));
    ASSERT_KEY(e.r, "ho:own", NULL);
    redislock_lock_free(a);
    redislock_lock_free(b);
    redislock_lock_free(c);
    th_env_stop(&e);
}

/* A waiter of an owner id, stopped (SIGSTOP) once its BLPOP and the attempt
 * behind it are out: the attempt takes the lock for it while it sleeps,
 * that lease runs out, and another handle of the same owner id takes the
 * lock afresh. When the waiter runs again, the hold its attempt took is
 * gone: it must not count the other handle's hold as its own (confirming
 * it with an extend, then releasing it), but try again within its wait,
 * which re-enters the other's hold. The other's lease and hold are
 * untouched. */
void test_holders_stopped_waiter_spares_owner_partner(void)
{
    th_env e = th_env_start();
    redislock_lock *x = th_lock(e.c, "ho:part"), *a = th_lock(e.c, "ho:part");
    redislock_acquire_options xo = th_aopts(30000, 0, 0);
    redislock_acquire_options ao = th_aopts(10000, 0, 0);
    pid_t w;
    int rc;

    ao.owner = "svc-2";
    ao.reentrant = 1;
    ASSERT_OK(redislock_acquire(x, &xo));
    if ((w = fork()) == 0) {
        redislock_client *c = th_client(e.s);
        redislock_lock *l = th_lock(c, "ho:part");
        redislock_acquire_options o = th_aopts(300, 9000, 0);
        redislock_err err, rerr = REDISLOCK_OK;
        o.owner = "svc-2";
        o.reentrant = 1;
        err = redislock_acquire(l, &o);
        if (err == REDISLOCK_OK)
            rerr = redislock_release(l);
        if (err != REDISLOCK_OK || rerr != REDISLOCK_OK)
            test_log("waiter: acquire %s, release %s (%s)",
                     redislock_errname(err), redislock_errname(rerr),
                     redislock_errdetail());
        _exit(err == REDISLOCK_OK && rerr == REDISLOCK_OK ? 0 : 1);
    }
    ASSERT_GT(w, 0);
    th_wait_blocked(e.r, 1, 3000);
    ASSERT_EQ_INT(kill(w, SIGSTOP), 0);
    ASSERT_OK(redislock_release(x));
    /* The attempt behind the BLPOP took the lock for 300 ms; it lapses. */
    ASSERT(th_wait_key_gone(e.r, "ho:part", 7, 3000));
    ASSERT_OK(redislock_acquire(a, &ao));
    ASSERT_FIELD(e.r, "ho:part", "holds", "1");
    ASSERT_EQ_INT(kill(w, SIGCONT), 0);
    rc = join_child(w, 12000);
    ASSERT_EQ_INT(rc, 0);
    ASSERT_OK(redislock_check(a));
    ASSERT_TRUTHFUL(e.r, "ho:part", a);
    ASSERT_FIELD(e.r, "ho:part", "holds", "1");
    ASSERT_OK(redislock_release(a));
    ASSERT_KEY(e.r, "ho:part", NULL);
    redislock_lock_free(x);
    redislock_lock_free(a);
    th_env_stop(&e);
}

/* The same on an event loop that does not run meanwhile (the
 * application busy, or the process stopped): the BLPOP and the attempt
 * behind it are answered while the loop reads nothing, and by the time
 * it does, that 1 s lease has lapsed and the partner handle holds the
 * key. The loop waiter must not report the stale grant (a lock with no
 * validity, whose release finds nothing of its own): it confirms the
 * lease, finds it gone, and tries again within its wait, re-entering the
 * partner's hold; its release gives that back, the partner's untouched. */
void test_holders_loop_stopped_waiter_spares_owner_partner(void)
{
    const driver *d = &adapter_poll;
    th_env e = th_env_start();
    redislock_client *c = th_client(e.s);
    redislock_lock *x = th_lock(e.c, "ho:lpart"), *a = th_lock(e.c, "ho:lpart");
    redislock_lock *l = th_lock(c, "ho:lpart");
    redislock_acquire_options xo = th_aopts(30000, 0, 0);
    redislock_acquire_options ao = th_aopts(10000, 0, 0);
    /* Its BLPOP blocks for half the lease: 500 ms to release x in. */
    redislock_acquire_options o = th_aopts(1000, 9000, 0);
    redislock_loop *lp;
    ad_done dn = {0};
    int64_t t0;
    void *h;

    ao.owner = o.owner = "svc-2";
    ao.reentrant = o.reentrant = 1;
    ASSERT_OK(redislock_acquire(x, &xo));
    h = d->open(c, &lp);
    ASSERT_OK(redislock_loop_acquire(lp, l, &o, ad_record, &dn));
    t0 = th_now_ms();
    while (th_blocked_clients(e.r) < 1 && th_now_ms() - t0 < 3000)
        ad_run_for(d, h, 5);
    ASSERT_EQ_INT(th_blocked_clients(e.r), 1);
    ASSERT_EQ_INT(dn.calls, 0);
    /* The loop stands still from here. */
    ASSERT_OK(redislock_release(x));
    ASSERT(th_wait_key_gone(e.r, "ho:lpart", 8, 3000));
    ASSERT_OK(redislock_acquire(a, &ao));
    ASSERT_FIELD(e.r, "ho:lpart", "holds", "1");
    ad_run_until(d, h, &dn.calls, 1, 9000);
    test_log("loop waiter: %s (%s), valid %lld ms", redislock_errname(dn.err),
             dn.detail, (long long)redislock_valid_ms(l));
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ASSERT_GT(redislock_valid_ms(l), 0);
    ASSERT_FIELD(e.r, "ho:lpart", "holds", "2");
    ASSERT_OK(redislock_loop_release(lp, l, 0, ad_record, &dn));
    ad_run_until(d, h, &dn.calls, 2, 5000);
    ASSERT_ERR(dn.err, REDISLOCK_OK);
    ASSERT_FIELD(e.r, "ho:lpart", "holds", "1");
    ASSERT_OK(redislock_check(a));
    ASSERT_TRUTHFUL(e.r, "ho:lpart", a);
    ASSERT_OK(redislock_release(a));
    ASSERT_KEY(e.r, "ho:lpart", NULL);
    d->close(h);
    redislock_lock_free(l);
    redislock_lock_free(x);
    redislock_lock_free(a);
    redislock_client_free(c);
    th_env_stop(&e);
}

/* Two handles of one owner id, one after the other: a's lease runs out and
 * b takes the key afresh (a later life of it). a's late extend, its late
 * release (with or without hold-after) and a re-entry that counted a's
 * lapsed hold as its own would each end b's hold or lengthen it for a;
 * none may. a hears REDISLOCK_EEXPIRED, and a's re-entry holds one hold
 * in b's life, which its one release gives back. */
void test_holders_owner_late_ops_spare_later_life(void)
{
    th_env e = th_env_start();
    redislock_lock *a = th_lock(e.c, "ho:life"), *b = th_lock(e.c, "ho:life");
    redislock_acquire_options ao = th_aopts(150, 0, 0);
    redislock_acquire_options bo = th_aopts(10000, 0, 0);
    char gen[24];

    ao.owner = bo.owner = "svc-3";
    ao.reentrant = bo.reentrant = 1;
    ASSERT_OK(redislock_acquire(a, &ao));
    ASSERT(th_wait_key_gone(e.r, "ho:life", 7, 3000));
    ASSERT_OK(redislock_acquire(b, &bo));
    snprintf(gen, sizeof gen, "%lld", (long long)redislock_fence(b));
    ASSERT_FIELD(e.r, "ho:life", "gen", gen);

    ASSERT_ERR(redislock_extend(a, 60000), REDISLOCK_EEXPIRED);
    ASSERT_LT(th_pttl(e.r, "ho:life"), 10001);
    ASSERT_EQ_INT(redislock_holds(a), 0);
    ASSERT_OK(redislock_acquire(a, &ao));
    ASSERT_FIELD(e.r, "ho:life", "holds", "2");
    ASSERT_OK(redislock_release(a));
    ASSERT_FIELD(e.r, "ho:life", "holds", "1");

    /* a's re-entry into its own life, then that life ends too. */
    ASSERT_OK(redislock_release(b));
    ASSERT_OK(redislock_acquire(a, &ao));
    ASSERT_OK(redislock_acquire(a, &ao));
    ASSERT_EQ_INT(redislock_holds(a), 2);
    ASSERT(th_wait_key_gone(e.r, "ho:life", 7, 3000));
    ASSERT_OK(redislock_acquire(b, &bo));
    /* A re-entry that lands in b's life: a's two lapsed holds are gone,
     * so a counts one, and its one release leaves b's hold. */
    ASSERT_OK(redislock_acquire(a, &ao));
    ASSERT_EQ_INT(redislock_holds(a), 1);
    ASSERT_FIELD(e.r, "ho:life", "holds", "2");
    ASSERT_OK(redislock_release(a));
    ASSERT_EQ_INT(redislock_holds(a), 0);
    ASSERT_FIELD(e.r, "ho:life", "holds", "1");

    /* A late release, plain and with hold-after, of a lapsed hold. */
    ASSERT_OK(redislock_release(b));
    ASSERT_OK(redislock_acquire(a, &ao));
    ASSERT(th_wait_key_gone(e.r, "ho:life", 7, 3000));
    ASSERT_OK(redislock_acquire(b, &bo));
    ASSERT_ERR(redislock_release_hold(a, 5000), REDISLOCK_EEXPIRED);
    ASSERT_FIELD(e.r, "ho:life", "owner", "svc-3");
    ASSERT_FIELD(e.r, "ho:life", "holds", "1");
    ASSERT_OK(redislock_release(b));
    ASSERT_OK(redislock_acquire(a, &ao));
    ASSERT(th_wait_key_gone(e.r, "ho:life", 7, 3000));
    ASSERT_OK(redislock_acquire(b, &bo));
    ASSERT_ERR(redislock_release(a), REDISLOCK_EEXPIRED);
    ASSERT_FIELD(e.r, "ho:life", "holds", "1");
    ASSERT_OK(redislock_check(b));
    ASSERT_TRUTHFUL(e.r, "ho:life", b);
    ASSERT_OK(redislock_release(b));
    ASSERT_KEY(e.r, "ho:life", NULL);
    redislock_lock_free(a);
    redislock_lock_free(b);
    th_env_stop(&e);
}

/* An extend to a shorter TTL whose reply is lost (held up in the network
 * past the command timeout) runs late: the lease must still cover the
 * validity the handle kept. */
void test_holders_lost_extend_never_shortens(void)
{
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    th_proxy *p = th_proxy_start(s->port);
    redislock_options opts = {0};
    redislock_client *c;
    redislock_lock *l;
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    th_proxy_stats st;
    redislock_err err;
    char url[64];
    int64_t end;

    opts.command_timeout_ms = 200;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", th_proxy_port(p));
    c = th_client_url(url, &opts);
    l = th_lock(c, "ho:ext");
    ASSERT_OK(redislock_acquire(l, &o));
    /* Loads the script: a late EVALSHA must run, not meet NOSCRIPT. */
    ASSERT_OK(redislock_extend(l, 10000));
    th_proxy_set_delay(p, 500);
    err = redislock_extend(l, 500);
    th_proxy_set_delay(p, 0);
    ASSERT(err == REDISLOCK_ETIMEDOUT || err == REDISLOCK_EIO);
    /* The late extend reaches the server (it would cut the lease to
     * 500 ms if leases could be shortened). */
    end = th_now_ms() + 3000;
    do {
        th_proxy_stats_get(p, &st);
        th_sleep_ms(5);
    } while (st.held_forwarded < st.held && th_now_ms() < end);
    ASSERT_EQ_INT(st.held_forwarded, st.held);
    ASSERT_GT(st.held, 0);
    th_sleep_ms(20);
    test_log("PTTL after the late extend: %lld, validity %lld ms",
             th_pttl(r, "ho:ext"), (long long)redislock_valid_ms(l));
    ASSERT_OK(redislock_check(l));
    ASSERT_TRUTHFUL(r, "ho:ext", l);
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    redislock_client_free(c);
    th_proxy_stop(p);
    redisFree(r);
    th_server_stop(s);
}

/* How an acquire is made in the ghost tests. */
typedef enum { G_PLAIN, G_OWNER, G_META, G_REENTRANT } ghost_fmt;

static redislock_acquire_options ghost_opts(ghost_fmt f)
{
    redislock_acquire_options o = th_aopts(10000, 0, 0);

    if (f == G_OWNER)
        o.owner = "ghost-owner";
    if (f == G_META)
        o.metadata = "{\"job\":\"ghost\"}";
    if (f == G_REENTRANT)
        o.reentrant = 1;
    return o;
}

#define GHOST_DELAY_MS 600
#define GHOST_TIMEOUT_MS 300

/* In a child: a client through the proxy, then (once the parent has set
 * the delay: one byte each way on sync) one acquire, which times out;
 * writes the monotonic time of the error to sync and exits at once (the
 * client is freed first, as a short-lived program does). */
static void ghost_child(int port, const char *key, ghost_fmt f, int sync[2])
{
    char url[64], b = 0;
    redislock_options opts = {0};
    redislock_client *c;
    redislock_lock *l;
    redislock_acquire_options o = ghost_opts(f);
    redislock_err err;
    int64_t at;

    opts.command_timeout_ms = GHOST_TIMEOUT_MS;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    c = th_client_url(url, &opts);
    l = th_lock(c, key);
    if (write(sync[1], &b, 1) != 1 || read(sync[0], &b, 1) != 1)
        _exit(3);
    err = redislock_acquire(l, &o);
    at = th_now_ms();
    if (write(sync[1], &at, sizeof at) != (ssize_t)sizeof at)
        _exit(3);
    redislock_lock_free(l);
    redislock_client_free(c);
    _exit(err == REDISLOCK_ETIMEDOUT || err == REDISLOCK_EIO ? 0 : 2);
}

/* An acquire of each lock format whose request reaches the server after
 * the client gave up (the network recovers right after the error) leaves
 * no key behind within 1 s of the call's error, from a process that exits
 * right after the error, and nothing comes back once every delayed byte
 * has arrived. */
void test_holders_ghost_every_format_short_lived(void)
{
    static const char *const keys[] = {"ho:g:plain", "ho:g:owner", "ho:g:meta",
                                       "ho:g:re"};
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    th_proxy *p = th_proxy_start(s->port);
    redislock_client *direct = th_client(s);
    redislock_lock *warm = th_lock(direct, "ho:g:warm");
    redislock_acquire_options wo = th_aopts(1000, 0, 0);
    int f;

    /* Load the scripts, so that a late EVALSHA runs instead of meeting
     * NOSCRIPT (which would take nothing and prove nothing). */
    ASSERT_OK(redislock_acquire(warm, &wo));
    ASSERT_OK(redislock_release(warm));
    redislock_lock_free(warm);
    redislock_client_free(direct);
    for (f = G_PLAIN; f <= G_REENTRANT; f++) {
        int to_child[2], to_parent[2], mine[2], theirs[2];
        int64_t err_at = 0;
        char b = 0;
        pid_t pid;

        ASSERT_EQ_INT(pipe(to_child), 0);
        ASSERT_EQ_INT(pipe(to_parent), 0);
        th_proxy_set_delay(p, 0);
        theirs[0] = to_child[0];
        theirs[1] = to_parent[1];
        if ((pid = fork()) == 0)
            ghost_child(th_proxy_port(p), keys[f], (ghost_fmt)f, theirs);
        ASSERT_GT(pid, 0);
        mine[0] = to_parent[0];
        mine[1] = to_child[1];
        close(to_child[0]);
        close(to_parent[1]);
        ASSERT_EQ_INT(read(mine[0], &b, 1), 1);
        th_proxy_set_delay(p, GHOST_DELAY_MS);
        ASSERT_EQ_INT(write(mine[1], &b, 1), 1);
        ASSERT_EQ_INT(read(mine[0], &err_at, sizeof err_at), sizeof err_at);
        th_proxy_set_delay(p, 0);
        close(mine[0]);
        close(mine[1]);
        ASSERT_EQ_INT(join_child(pid, 5000), 0);
        /* By now the ghost, sent a command timeout before the error and
         * held GHOST_DELAY_MS, has landed, or been refused. */
        th_sleep_ms(err_at + GHOST_DELAY_MS - GHOST_TIMEOUT_MS + 50 -
                    th_now_ms());
        /* The ghost lands GHOST_DELAY_MS after its send, the abandon
         * before or after it; the key is gone within the second after the
         * error either way. */
        ASSERT(th_wait_key_gone(r, keys[f], strlen(keys[f]),
                                err_at + 1000 - th_now_ms()));
        test_log("%s: no key %lld ms after the error", keys[f],
                 (long long)(th_now_ms() - err_at));
    }
    /* Every held byte has been forwarded by now: nothing re-appears. */
    th_sleep_ms(2 * GHOST_DELAY_MS);
    for (f = G_PLAIN; f <= G_REENTRANT; f++)
        ASSERT_EQ_INT(th_cmd_int(r, "EXISTS %s", keys[f]), 0);
    th_proxy_stop(p);
    redisFree(r);
    th_server_stop(s);
}

/* A re-entry whose reply is lost is taken back: the owner's one release
 * then frees the lock (it would otherwise stay with a hold nobody has). */
void test_holders_ghost_reentry_undone(void)
{
    th_server *s = th_server_start(NULL);
    redisContext *r = th_server_redis(s);
    th_proxy *p = th_proxy_start(s->port);
    redislock_options opts = {0};
    redislock_acquire_options o = ghost_opts(G_REENTRANT);
    redislock_client *c;
    redislock_lock *l;
    redislock_err err;
    char url[64];

    opts.command_timeout_ms = GHOST_TIMEOUT_MS;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", th_proxy_port(p));
    c = th_client_url(url, &opts);
    l = th_lock(c, "ho:g:again");
    ASSERT_OK(redislock_acquire(l, &o));
    th_proxy_set_delay(p, GHOST_DELAY_MS);
    err = redislock_acquire(l, &o);
    th_proxy_set_delay(p, 0);
    ASSERT(err == REDISLOCK_ETIMEDOUT || err == REDISLOCK_EIO);
    /* Past the delay, the re-entry has landed and been taken back. */
    th_sleep_ms(2 * GHOST_DELAY_MS);
    ASSERT_EQ_INT(redislock_holds(l), 1);
    ASSERT_OK(redislock_release(l));
    ASSERT_EQ_INT(th_cmd_int(r, "EXISTS %s", "ho:g:again"), 0);
    redislock_lock_free(l);
    redislock_client_free(c);
    th_proxy_stop(p);
    redisFree(r);
    th_server_stop(s);
}

/* A hold-after reservation is nobody's: its value is refused as a token
 * or owner id, and the reservation lasts. */
void test_holders_hold_after_unowned(void)
{
    th_env e = th_env_start();
    redislock_lock *l = th_lock(e.c, "ho:res"), *m = th_lock(e.c, "ho:res");
    redislock_acquire_options o = th_aopts(5000, 0, 0);

    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_OK(redislock_release_hold(l, 3000));
    ASSERT_ERR(redislock_adopt(m, "redislock:hold-after"), REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "hold-after") != NULL);
    o.owner = "redislock:hold-after";
    ASSERT_ERR(redislock_acquire(m, &o), REDISLOCK_EINVAL);
    ASSERT_GT(th_pttl(e.r, "ho:res"), 2000);
    ASSERT_KEY(e.r, "ho:res", "redislock:hold-after");
    redislock_lock_free(l);
    redislock_lock_free(m);
    th_env_stop(&e);
}

/* The members a key held by many keeps beside its shares (its kind, a
 * waiting writer's record) are nobody's: refused as tokens, so no release
 * or extend can remove them. */
void test_holders_share_members_unowned(void)
{
    th_env e = th_env_start();
    redislock_lock *l = th_lock(e.c, "ho:sh"), *m = th_lock(e.c, "ho:sh");
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    static const char *const members[] = {
        "redislock:shared", "redislock:writer", "redislock:limit:3",
        "redislock:anything"};
    size_t i;

    o.shared = 1;
    ASSERT_OK(redislock_acquire(l, &o));
    for (i = 0; i < sizeof members / sizeof *members; i++) {
        ASSERT_ERR(redislock_adopt(m, members[i]), REDISLOCK_EINVAL);
        ASSERT(strstr(redislock_errdetail(), "redislock:") != NULL);
        ASSERT_ERR(redislock_release(m), REDISLOCK_EINVAL);
    }
    ASSERT_EQ_INT(th_cmd_int(e.r, "ZCARD %s", "ho:sh"), 2);
    ASSERT_OK(redislock_release(l));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS %s", "ho:sh"), 0);
    redislock_lock_free(l);
    redislock_lock_free(m);
    th_env_stop(&e);
}

/* A fencing token that is not positive is a protocol error, never a
 * lock with that token. */
void test_holders_bad_fence_refused(void)
{
    fs_rule rules[] = {FS_ALWAYS("EVALSHA", "*3\r\n:1\r\n:1\r\n:-5\r\n")};
    fs_server *fs = fs_start(rules, 1, NULL);
    redislock_client *c = th_client_url(fs->unix_url, NULL);
    redislock_lock *l = th_lock(c, "ho:fence");
    redislock_acquire_options o = th_aopts(5000, 0, 0);

    ASSERT_ERR(redislock_acquire(l, &o), REDISLOCK_EPROTOCOL);
    ASSERT(strstr(redislock_errdetail(), "-5") != NULL);
    ASSERT_EQ_INT(redislock_fence(l), 0);
    ASSERT(redislock_token(l) == NULL);
    redislock_lock_free(l);
    redislock_client_free(c);
    fs_stop(fs);
}

static atomic_int lost_why;

static void note_loss(redislock_lock *l, redislock_err why, void *arg)
{
    (void)l;
    (void)arg;
    atomic_store(&lost_why, (int)why);
}

/* The loss the watchdog reports when renewals fail until the validity
 * runs out is the one redislock_check() gives from that moment. */
void test_holders_loss_reason_consistent(void)
{
    th_server *s = th_server_start(NULL);
    redislock_options opts = {0};
    redislock_client *c;
    redislock_lock *l;
    redislock_acquire_options o = th_aopts(600, 0, 0);
    int64_t end;

    opts.command_timeout_ms = 100;
    c = th_client_url(s->unix_url, &opts);
    l = th_lock(c, "ho:why");
    o.watchdog = 1;
    o.on_lost = note_loss;
    ASSERT_OK(redislock_acquire(l, &o));
    th_server_pause(s);
    end = th_now_ms() + 3000;
    while (atomic_load(&lost_why) == 0 && th_now_ms() < end)
        th_sleep_ms(5);
    th_server_resume(s);
    ASSERT_EQ_INT(atomic_load(&lost_why), REDISLOCK_EEXPIRED);
    ASSERT_EQ_INT(redislock_check(l), atomic_load(&lost_why));
    redislock_lock_free(l);
    redislock_client_free(c);
    th_server_stop(s);
}

/* A Redlock release is done once a majority no longer hold the token:
 * a server that now holds another owner's lock counts, as one that it
 * freed or that had let it expire does; only the silent ones are
 * unknown. */
void test_holders_redlock_release_counts_other_owner(void)
{
    th_servers e = th_servers_start(3);
    redislock_client *c;
    redislock_lock *l;
    redislock_acquire_options o = th_aopts(10000, 0, 0);

    ASSERT_OK(redislock_client_new_redlock(&c, e.urls, 3, NULL));
    l = th_lock(c, "ho:rl");
    ASSERT_OK(redislock_acquire(l, &o));
    /* Server 1's copy went (expired, say) and another owner took it;
     * server 2 is gone: one freed, one other owner's, one unknown. */
    freeReplyObject(th_cmd(e.r[1], "SET %s %s", "ho:rl", "someone-else"));
    th_servers_kill(&e, 2);
    ASSERT_OK(redislock_release(l));
    ASSERT_EQ_INT(th_cmd_int(e.r[0], "EXISTS %s", "ho:rl"), 0);
    ASSERT_KEY(e.r[1], "ho:rl", "someone-else");
    redislock_lock_free(l);
    redislock_client_free(c);
    th_servers_stop(&e);
}
