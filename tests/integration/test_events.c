/*
 * Event hooks (redislock_options.on_event): each event of a lock's life
 * reaches the callback once, in order, with the fields its kind names,
 * on the thread the man page says: acquired after attempts that met a
 * holder (contended, retry), released with the hold's length, renewed by
 * an extend, not acquired when the wait runs out; the watchdog's
 * renewals and the loss it finds on the watchdog thread; a failed
 * renewal while the server does not answer.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/fixture.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

#define KEY "ev:k"
#define MAX_EVENTS 256

typedef struct seen {
    redislock_event_kind kind;
    redislock_lock *lock;
    redislock_err err;
    int attempts;
    int64_t ms, fence;
    int on_main;  /* called on the test's own thread */
    int key_ok;   /* ev->key was KEY */
    int64_t valid; /* redislock_valid_ms(ev->lock) in the callback */
} seen;

typedef struct recorder {
    pthread_mutex_t mu;
    pthread_t main;
    int n;
    seen ev[MAX_EVENTS];
} recorder;

static void record(const redislock_event *ev, void *arg)
{
    recorder *r = arg;

    pthread_mutex_lock(&r->mu);
    if (r->n < MAX_EVENTS) {
        seen *s = &r->ev[r->n++];

        s->kind = ev->kind;
        s->lock = ev->lock;
        s->err = ev->err;
        s->attempts = ev->attempts;
        s->ms = ev->ms;
        s->fence = ev->fence;
        s->on_main = pthread_equal(pthread_self(), r->main);
        s->key_ok = ev->keylen == strlen(KEY) &&
                    memcmp(ev->key, KEY, ev->keylen) == 0;
        s->valid = redislock_valid_ms(ev->lock);
    }
    pthread_mutex_unlock(&r->mu);
}

static const char *kind_name(redislock_event_kind k)
{
    static const char *const names[] = {
        "?",        "acquired",     "contended", "retry", "not-acquired",
        "released", "renewed",      "renew-failed", "lost"};

    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

/* The events of lock l so far, as "kind kind ...", and their count. */
static int events_of(recorder *r, const redislock_lock *l, char *out,
                     size_t len)
{
    int i, n = 0;
    size_t at = 0;

    out[0] = '\0';
    pthread_mutex_lock(&r->mu);
    for (i = 0; i < r->n; i++) {
        if (r->ev[i].lock != l)
            continue;
        n++;
        at += (size_t)snprintf(out + at, at < len ? len - at : 0, "%s%s",
                               at ? " " : "", kind_name(r->ev[i].kind));
    }
    pthread_mutex_unlock(&r->mu);
    return n;
}

/* The last event of lock l of kind k; fails when there is none. */
static seen last_of(recorder *r, const redislock_lock *l,
                    redislock_event_kind k)
{
    seen s;
    int i, found = 0;

    pthread_mutex_lock(&r->mu);
    for (i = 0; i < r->n; i++)
        if (r->ev[i].lock == l && r->ev[i].kind == k) {
            s = r->ev[i];
            found = 1;
        }
    pthread_mutex_unlock(&r->mu);
    if (!found)
        test_fail_(__FILE__, __LINE__, "no %s event", kind_name(k));
    return s;
}

static redislock_client *events_client(const th_server *s, recorder *r,
                                       int64_t command_timeout_ms)
{
    redislock_options o;

    memset(&o, 0, sizeof o);
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    r->main = pthread_self();
    o.on_event = record;
    o.on_event_arg = r;
    o.command_timeout_ms = command_timeout_ms;
    return th_client_url(s->unix_url, &o);
}

/* Acquired, contended, retry, released, renewed, not acquired: each once
 * per step, in order, on the caller's thread, with its fields. */
void test_events_lock_life(void)
{
    th_server *s = th_server_start(NULL);
    redisContext *rc = th_server_redis(s);
    recorder r;
    redislock_client *c = events_client(s, &r, 0);
    redislock_lock *a = th_lock(c, KEY), *b = th_lock(c, KEY);
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    char got[1024];
    th_waiter w;
    seen e;
    int i;

    ASSERT_OK(redislock_acquire(a, &o));
    ASSERT_EQ_INT(events_of(&r, a, got, sizeof got), 1);
    e = last_of(&r, a, REDISLOCK_EVENT_ACQUIRED);
    ASSERT_EQ_INT(e.attempts, 1);
    ASSERT_EQ_INT(e.fence, redislock_fence(a));
    ASSERT_GT(e.valid, 0);
    /* Tried once while a holds it: contended, then not acquired. */
    ASSERT_ERR(redislock_acquire(b, &o), REDISLOCK_EHELD);
    events_of(&r, b, got, sizeof got);
    ASSERT_EQ_STR(got, "contended not-acquired");
    e = last_of(&r, b, REDISLOCK_EVENT_CONTENDED);
    ASSERT_GT(e.ms, 4000);
    ASSERT_LE(e.ms, 5000);
    e = last_of(&r, b, REDISLOCK_EVENT_NOT_ACQUIRED);
    ASSERT_EQ_INT(e.err, REDISLOCK_EHELD);
    ASSERT_EQ_INT(e.attempts, 1);
    /* A waiter: contended, a pause, then acquired once a releases. */
    o.wait_ms = 10000;
    th_waiter_start_lock(&w, b, &o);
    th_wait_blocked(rc, 1, 5000);
    th_sleep_ms(50);
    ASSERT_OK(redislock_release(a));
    th_waiter_join_ok(&w, 5000);
    e = last_of(&r, a, REDISLOCK_EVENT_RELEASED);
    ASSERT_EQ_INT(e.err, REDISLOCK_OK);
    ASSERT_GE(e.ms, 50);
    events_of(&r, b, got, sizeof got);
    test_log("b: %s", got);
    ASSERT(strncmp(got, "contended not-acquired contended retry", 38) == 0);
    e = last_of(&r, b, REDISLOCK_EVENT_RETRY);
    ASSERT_GT(e.ms, 0);
    e = last_of(&r, b, REDISLOCK_EVENT_ACQUIRED);
    ASSERT_GE(e.attempts, 2);
    ASSERT_GE(e.ms, 50);
    ASSERT_EQ_INT(e.fence, redislock_fence(b));
    /* An extend: renewed, with the validity it gave. */
    ASSERT_OK(redislock_extend(b, 8000));
    e = last_of(&r, b, REDISLOCK_EVENT_RENEWED);
    ASSERT_GT(e.ms, 7000);
    ASSERT_OK(redislock_release(b));
    /* Every event so far on the caller's thread, naming the key. */
    for (i = 0; i < r.n; i++) {
        if (r.ev[i].lock == b && !r.ev[i].on_main)
            continue; /* b's waiter ran on a thread of its own */
        ASSERT(r.ev[i].on_main);
        ASSERT(r.ev[i].key_ok);
    }
    redislock_lock_free(a);
    redislock_lock_free(b);
    redislock_client_free(c);
    pthread_mutex_destroy(&r.mu);
    redisFree(rc);
    th_server_stop(s);
}

/* The watchdog's renewals and the loss it finds: on the watchdog thread,
 * the loss once, even after the release that also finds it. */
void test_events_watchdog_renewed_and_lost(void)
{
    th_server *s = th_server_start(NULL);
    redisContext *rc = th_server_redis(s);
    recorder r;
    redislock_client *c = events_client(s, &r, 0);
    redislock_lock *a = th_lock(c, KEY);
    redislock_acquire_options o = th_aopts(300, 0, 0);
    int64_t t0 = th_now_ms();
    char got[1024];
    seen e;

    o.watchdog = 1;
    ASSERT_OK(redislock_acquire(a, &o));
    /* A renewal every third of the TTL. */
    while (events_of(&r, a, got, sizeof got) < 3 && th_now_ms() - t0 < 5000)
        th_sleep_ms(10);
    e = last_of(&r, a, REDISLOCK_EVENT_RENEWED);
    ASSERT(!e.on_main);
    ASSERT_GT(e.ms, 0);
    ASSERT_LE(e.ms, 300);
    /* The key taken away: the next renewal finds it gone. */
    ASSERT_EQ_INT(th_cmd_int(rc, "DEL %s", KEY), 1);
    t0 = th_now_ms();
    while (redislock_check(a) == REDISLOCK_OK && th_now_ms() - t0 < 5000)
        th_sleep_ms(5);
    e = last_of(&r, a, REDISLOCK_EVENT_LOST);
    ASSERT(!e.on_main);
    ASSERT(e.err == REDISLOCK_EEXPIRED || e.err == REDISLOCK_ELOST);
    ASSERT(redislock_release(a) != REDISLOCK_OK);
    events_of(&r, a, got, sizeof got);
    test_log("a: %s", got);
    /* One loss, then the release that found it. */
    ASSERT(strstr(got, "lost released") != NULL);
    ASSERT(strstr(strstr(got, "lost") + 4, "lost") == NULL);
    e = last_of(&r, a, REDISLOCK_EVENT_RELEASED);
    ASSERT(e.err == REDISLOCK_EEXPIRED || e.err == REDISLOCK_ELOST);
    redislock_lock_free(a);
    redislock_client_free(c);
    pthread_mutex_destroy(&r.mu);
    redisFree(rc);
    th_server_stop(s);
}

/* An extend that gets no answer: renew failed, with the error, and the
 * lock still held once the server answers again. */
void test_events_renew_failed(void)
{
    th_server *s = th_server_start(NULL);
    recorder r;
    redislock_client *c = events_client(s, &r, 200);
    redislock_lock *a = th_lock(c, KEY);
    redislock_acquire_options o = th_aopts(10000, 0, 0);
    seen e;

    ASSERT_OK(redislock_acquire(a, &o));
    th_server_pause(s);
    ASSERT_ERR(redislock_extend(a, 10000), REDISLOCK_ETIMEDOUT);
    th_server_resume(s);
    e = last_of(&r, a, REDISLOCK_EVENT_RENEW_FAILED);
    ASSERT_EQ_INT(e.err, REDISLOCK_ETIMEDOUT);
    ASSERT(e.on_main);
    ASSERT_OK(redislock_extend(a, 10000));
    ASSERT_OK(redislock_release(a));
    redislock_lock_free(a);
    redislock_client_free(c);
    pthread_mutex_destroy(&r.mu);
    th_server_stop(s);
}
