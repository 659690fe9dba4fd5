/*
 * A section held as another library holds a lock (the foreign modes):
 * SET key token NX PX ttl, tried every 10-30 ms while it waits, as
 * redis-py, redsync and bsm/redislock do, and released by a script that
 * deletes the key if it still holds the token. Its release wakes no
 * redislock waiter: they wait behind it by tracking the key (track.c),
 * and the liveness check's missed-grant rule holds them to taking it
 * once it is free. Its leases are long and its holds short, so that a
 * waiter that missed a release would wait out the lease, past its own
 * wait.
 *
 * Recorded as the library's sections are (worker.c): the attempt (with
 * a wait of 0, since a poller's liveness is not the library's to
 * promise), the acquisition (no fencing token: the fence checks skip
 * it), the belief from the SET's reply to its send plus the TTL less the
 * library's drift allowance, and the release.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "excl_int.h"
#include "harness/util.h"

#define POLL_LO_MS 10
#define POLL_HI_MS 30

static const char release_lua[] =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then "
    "return redis.call('DEL', KEYS[1]) end return 0";

/* The process's connection to the lock's server, made when needed. */
static redisContext *fc;

static redisContext *conn(const excl_worker *w)
{
    struct timeval tv = {EXCL_CMD_TIMEOUT_MS / 1000,
                         (EXCL_CMD_TIMEOUT_MS % 1000) * 1000};

    if (fc != NULL && fc->err) {
        redisFree(fc);
        fc = NULL;
    }
    if (fc == NULL) {
        /* A server killed under a write would raise SIGPIPE. */
        signal(SIGPIPE, SIG_IGN);
        fc = redisConnectUnixWithTimeout(w->t->sock[0], tv);
        if (fc != NULL && !fc->err)
            redisSetTimeout(fc, tv);
    }
    return fc != NULL && !fc->err ? fc : NULL;
}

/* One SET NX PX: 1 taken, 0 refused or not sent, -1 unknown (no reply:
 * it may have run). */
static int try_take(const excl_worker *w, const char *key, const char *tok,
                    int64_t ttl)
{
    redisContext *c = conn(w);
    redisReply *r;
    int got;

    if (c == NULL)
        return 0;
    r = redisCommand(c, "SET %s %s NX PX %lld", key, tok, (long long)ttl);
    if (r == NULL)
        return -1;
    got = r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    return got;
}

/* The compare-and-delete: OK, EEXPIRED (the key was not ours any more)
 * or EIO (no reply). */
static redislock_err give_back(const excl_worker *w, const char *key,
                               const char *tok)
{
    redisContext *c = conn(w);
    redisReply *r;
    redislock_err err;

    if (c == NULL ||
        (r = redisCommand(c, "EVAL %s 1 %s %s", release_lua, key, tok)) == NULL)
        return REDISLOCK_EIO;
    err = r->type != REDIS_REPLY_INTEGER ? REDISLOCK_EIO
          : r->integer == 1              ? REDISLOCK_OK
                                         : REDISLOCK_EEXPIRED;
    freeReplyObject(r);
    return err;
}

/* Takes the key within the section's wait; *sent: when the SET that took
 * it was sent. The attempt's record a starts at each SET's send, written
 * anew before it goes (a refused SET held nothing, so the key is not
 * "possibly held" from the first), and again with the outcome. */
static int take(excl_worker *w, const excl_section *s, const char *key,
                const char *tok, excl_rec *a, int64_t *sent)
{
    int64_t deadline = excl_now_us() + s->o.wait_ms * 1000;
    int got;

    excl_fill(w, s, a, EXCL_ATTEMPT);
    a->x = EXCL_PENDING;
    for (;;) {
        *sent = a->t0 = excl_now_us();
        excl_history_add(w->t->hist_fd, a);
        got = try_take(w, key, tok, s->o.ttl_ms);
        if (got != 0 || excl_now_us() >= deadline || atomic_load(&w->sh->stop))
            break;
        th_sleep_ms(excl_rng_range(&w->rng, POLL_LO_MS, POLL_HI_MS));
    }
    a->t1 = excl_now_us();
    a->x = got == 1   ? REDISLOCK_OK
           : got == 0 ? REDISLOCK_EHELD
                      : REDISLOCK_ETIMEDOUT;
    excl_history_add(w->t->hist_fd, a);
    return got;
}

/* Holds from t_ok (the SET sent at sent) for the section's hold, then
 * gives the key back; the belief ends at the release call or the
 * lease's end less the drift, whichever comes first. */
static void hold(excl_worker *w, const excl_section *s, const char *key,
                 const char *tok, int64_t t_call, int64_t sent)
{
    excl_slot *sl = &w->sh->slot[w->idx];
    int64_t t_ok = excl_now_us(), drift = (s->o.ttl_ms / 100 + 2) * 1000;
    int64_t end = sent + s->o.ttl_ms * 1000 - drift, now;
    excl_rec r, c;

    excl_fill(w, s, &r, EXCL_ACQ);
    r.t0 = t_call;
    r.t1 = t_ok;
    excl_history_add(w->t->hist_fd, &r);
    excl_fill(w, s, &c, EXCL_CLAIM);
    c.group = ((uint64_t)1 << 63) | ((uint64_t)w->pid << 24) | w->acq;
    c.t0 = t_ok;
    c.t1 = end > t_ok ? end : t_ok;
    atomic_store(&sl->drift_us, drift);
    atomic_store(&sl->end_us, end);
    atomic_store(&sl->release_at, 0);
    excl_history_add(w->t->hist_fd, &c);
    atomic_store(&sl->state, EXCL_HOLDING);
    atomic_fetch_add(&w->sh->sections, 1);
    th_sleep_ms(s->hold_ms);
    now = excl_now_us();
    if (now < end) {
        c.t1 = now;
        c.flags |= EXCL_C_CLOSED;
    }
    atomic_store(&sl->end_us, 0);
    excl_history_add(w->t->hist_fd, &c);
    atomic_store(&sl->state, EXCL_IDLE);
    excl_fill(w, s, &r, EXCL_RELEASE);
    r.t0 = excl_now_us();
    r.x = give_back(w, key, tok);
    r.t1 = excl_now_us();
    excl_history_add(w->t->hist_fd, &r);
}

void excl_foreign_section(excl_worker *w, excl_section *s)
{
    excl_slot *sl = &w->sh->slot[w->idx];
    char key[32], tok[64];
    int64_t sent = 0;
    excl_rec a;
    int got;

    excl_key_name(s->key, key, sizeof key);
    w->acq++;
    snprintf(tok, sizeof tok, "foreign-%d-%u", w->pid, (unsigned)w->acq);
    atomic_store(&sl->key, s->key);
    atomic_store(&sl->fair, 0);
    atomic_store(&sl->state, EXCL_WAITING);
    got = take(w, s, key, tok, &a, &sent);
    if (got == 1)
        hold(w, s, key, tok, a.t0, sent);
    atomic_store(&sl->state, EXCL_IDLE);
    th_sleep_ms(got < 0 ? excl_rng_range(&w->rng, 5, 50) : s->rest_ms);
}
