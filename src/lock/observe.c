/* An election's leader and its changes (etcd's Leader and Observe), read
 * from the record elect.lua keeps beside the key together with the key
 * itself, in one script: the record says what changed and in which
 * order, the key who leads now. A change the record lacks (a lease that
 * ran out) or no longer holds (trimmed) is learnt from the key, never
 * from the record alone. One operation on the engine, for the blocking
 * calls and the event loop's. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "alock.h"
#include "backoff.h"
#include "clock.h"
#include "elect.h"
#include "engine.h"
#include "error.h"
#include "keys.h"
#include "lock.h"
#include "rand.h"

/* How often a wait reads the record again where the server does not
 * tell it of the key's change (tracking refused, or being set up). */
#define POLL_US 20000

/* A wait's read that failed in a way a later one may not (the server
 * restarting, a failover under way, a reply lost or late) is sent again
 * after a pause: the first about this long, doubling up to FAIL_MAX_MS,
 * each jittered (the observers a failover cut off do not all come back
 * at once). */
#define FAIL_MIN_MS 50
#define FAIL_MAX_MS 1000

/* The longest a wait whose read was tracked goes without reading again:
 * the notice of the key's change ends it sooner; this bounds a wait on
 * a notice that a fault lost. */
#define QUIET_US 10000000

/* A read of the record and the key (elect.lua's 'read'), decoded; the
 * strings point into the reply. */
typedef struct seen {
    int64_t top;       /* the record's last n, 0: none */
    int entry;         /* whether the change after n came */
    int64_t en, eterm; /* its n and term */
    int ekind;         /* its kind, redislock_change */
    const rl__reply *eid, *evalue;
    const rl__reply *id, *value; /* the key's holder now, or NULL */
    int64_t term, ttl_ms;
    /* The terms of the record's last entry and of the entry the read
     * was after: 0 when it has none. */
    int64_t top_term, after_term;
} seen;

/* A leader read or an observation under way. */
typedef struct obs_op {
    rl__alock *al;
    redislock_lock *l;
    redislock_leader_info *out;
    size_t out_size;
    redislock_leader_info in; /* the caller's, as the library's struct */
    int leader;               /* redislock_leader(): the state, no change */
    int64_t deadline_us;
    rl__alock_pause pause; /* before the next read */
    /* A wait's notices of the key's change (track.h): its last read was
     * tracked and not sent on elsewhere by a cluster, its pause waits for
     * a notice, one came while its read was out. */
    rl__track_wait tw;
    /* The record's notices too: it changes with the key but for a
     * record trimmed or deleted by hand, which a wait hears as a gap. */
    rl__track_wait rtw;
    char *record;
    int tracked, resent, quiet, missed;
    int reading, paused;
    /* Reads that failed in a row, the last one's error and detail, and
     * when the first of them failed: a wait that ends while the record
     * cannot be read says so. */
    int fails;
    redislock_err failed;
    int64_t failing_since_us;
    char fail_detail[160];
    rl__alock_cb cb;
    void *arg;
} obs_op;

static int64_t num(const rl__reply *r)
{
    if (r->type == REDIS_REPLY_INTEGER)
        return r->integer;
    if (r->type == REDIS_REPLY_STRING)
        return strtoll(r->str, NULL, 10);
    return 0;
}

static const rl__reply *str(const rl__reply *r)
{
    return r->type == REDIS_REPLY_STRING ? r : NULL;
}

static int kind_of(const rl__reply *r)
{
    static const char *const names[] = {"elected", "proclaimed", "resigned"};
    int i;

    for (i = 0; r->type == REDIS_REPLY_STRING && i < 3; i++)
        if (strcmp(r->str, names[i]) == 0)
            return REDISLOCK_CHANGE_ELECTED + i;
    return -1;
}

static redislock_err decode(const rl__reply *r, seen *s)
{
    const rl__reply *e;

    memset(s, 0, sizeof *s);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 8)
        return rl__err(REDISLOCK_EPROTOCOL, "elect script's read answered "
                                            "no state");
    s->top = num(r->element[0]);
    e = r->element[1];
    if (e->type == REDIS_REPLY_ARRAY) {
        if (e->elements != 5 || (s->ekind = kind_of(e->element[1])) < 0)
            return rl__err(REDISLOCK_EPROTOCOL,
                           "elect script's record has an entry it did not "
                           "write");
        s->entry = 1;
        s->en = num(e->element[0]);
        s->eterm = num(e->element[2]);
        s->eid = str(e->element[3]);
        s->evalue = str(e->element[4]);
    }
    s->id = str(r->element[2]);
    s->term = s->id != NULL ? num(r->element[3]) : 0;
    s->value = s->id != NULL ? str(r->element[4]) : NULL;
    s->ttl_ms = s->id != NULL ? num(r->element[5]) : 0;
    s->top_term = num(r->element[6]);
    s->after_term = num(r->element[7]);
    return REDISLOCK_OK;
}

/* Copies the strings id and value into l's buffer and points o at them;
 * an empty value is none. */
static redislock_err set_strings(redislock_lock *l, redislock_leader_info *o,
                                 const rl__reply *id, const rl__reply *value)
{
    size_t ni = id != NULL ? id->len : 0;
    size_t nv = value != NULL ? value->len : 0;
    char *buf = malloc(ni + nv + 2);

    if (buf == NULL)
        return REDISLOCK_ENOMEM;
    free(l->elect_buf);
    l->elect_buf = buf;
    if (ni > 0)
        memcpy(buf, id->str, ni);
    buf[ni] = '\0';
    if (nv > 0)
        memcpy(buf + ni + 1, value->str, nv);
    buf[ni + 1 + nv] = '\0';
    o->id = id != NULL ? buf : NULL;
    o->id_len = ni;
    o->value = nv > 0 ? buf + ni + 1 : NULL;
    o->value_len = nv;
    return REDISLOCK_OK;
}

/* o as the key says it is now: the leader and its lease. */
static redislock_err now_state(redislock_lock *l, redislock_leader_info *o,
                               const seen *s, int kind)
{
    o->kind = kind;
    o->n = s->top;
    l->elect_seen_n = s->top;
    l->elect_seen_term = s->top_term;
    o->has_leader = s->id != NULL;
    o->term = s->term;
    o->ttl_ms = s->id != NULL ? s->ttl_ms : 0;
    return set_strings(l, o, s->id, s->value);
}

/* What the read s says comes after the observer's state o, written into
 * o; REDISLOCK_CHANGE_NONE when nothing has. */
static redislock_err next_change(redislock_lock *l, redislock_leader_info *o,
                                 const seen *s)
{
    if (s->top < o->n || (s->top > o->n && (!s->entry || s->en != o->n + 1)))
        /* The record began again, or lost what came after n. */
        return now_state(l, o, s, REDISLOCK_CHANGE_GAP);
    if (o->n > 0 && l->elect_seen_n == o->n &&
        s->after_term != l->elect_seen_term)
        /* The record's entry n is not the one this handle saw: its
         * history was replaced (a failover that lost the record's tail
         * and wrote others in its place, or a record begun again). */
        return now_state(l, o, s, REDISLOCK_CHANGE_GAP);
    if (s->entry) {
        o->kind = s->ekind;
        o->n = s->en;
        l->elect_seen_n = s->en;
        l->elect_seen_term = s->eterm;
        o->term = s->eterm;
        o->has_leader = s->ekind != REDISLOCK_CHANGE_RESIGNED;
        o->ttl_ms = 0;
        return set_strings(l, o, s->eid, s->evalue);
    }
    if (o->has_leader && (s->id == NULL || s->term != o->term)) {
        /* The leader's key went without a resignation: its lease ran
         * out (the record has no entry for that). */
        o->kind = REDISLOCK_CHANGE_EXPIRED;
        o->has_leader = 0;
        o->ttl_ms = 0;
        return set_strings(l, o, NULL, NULL);
    }
    o->kind = REDISLOCK_CHANGE_NONE;
    return REDISLOCK_OK;
}

/* op waits no more: its notices left, its memory freed. */
static void obs_free(obs_op *op)
{
    rl__track_leave(&op->tw);
    rl__track_leave(&op->rtw);
    free(op->record);
    free(op);
}

static void obs_finish(obs_op *op, redislock_err err)
{
    rl__alock_cb cb = op->cb;
    redislock_lock *l = op->l;
    void *arg = op->arg;
    char detail[sizeof op->fail_detail + 128];

    if (err == REDISLOCK_OK)
        rl__abi_out(op->out, op->out_size, &op->in, sizeof op->in);
    else
        snprintf(detail, sizeof detail, "%s", redislock_errdetail());
    /* Leaving the notices may close their connections, which writes a
     * detail of its own: the callback gets the outcome's. */
    obs_free(op);
    if (err != REDISLOCK_OK)
        rl__err(err, "%s", detail);
    cb(l, err, arg);
}

/* Whether a wait's read that failed with err is read again: the server
 * could not be reached or answered late (it may be restarting, its
 * master being replaced), or it is a replica or cannot serve now (a
 * failover under way). A read changes nothing, so one whose reply was
 * lost is sent again as it is. Anything else (an ACL, a script or
 * reply this client cannot use, memory) would fail again. */
static int read_again(redislock_err err)
{
    return err == REDISLOCK_ECONNECT || err == REDISLOCK_EIO ||
           err == REDISLOCK_ETIMEDOUT || err == REDISLOCK_EREADONLY ||
           err == REDISLOCK_ETRYLATER;
}

/* The wait ended while its reads were failing: their last error, the
 * detail saying for how long. */
static redislock_err failed_wait(const obs_op *op, int64_t now)
{
    return rl__err(op->failed,
                   "no change seen: the election's record could not be read "
                   "for the last %lld ms of the wait (%d tries): %s",
                   (long long)((now - op->failing_since_us) / 1000), op->fails,
                   op->fail_detail);
}

static redislock_err obs_read(obs_op *op);

static redislock_err obs_retry(obs_op *op, redislock_err err, int64_t now);

static void obs_wake(rl__alock_pause *p)
{
    obs_op *op = (obs_op *)((char *)p - offsetof(obs_op, pause));
    redislock_err err;

    op->paused = 0;
    if ((err = obs_read(op)) != REDISLOCK_OK && read_again(err))
        err = obs_retry(op, err, rl__now_us());
    if (err != REDISLOCK_OK)
        obs_finish(op, err);
}

/* The key changed, or may have: a wait for the notice reads at once; a
 * notice while the read is out is kept for after its reply. A poll's
 * pause runs its course (no more than POLL_US): a tracker that keeps
 * failing cannot make the reads come faster than the polls. */
static void obs_heard(obs_op *op)
{
    if (op->paused && op->quiet) {
        rl__alock_pause_end(&op->pause);
        obs_wake(&op->pause);
    } else if (op->reading) {
        op->missed = 1;
    }
}

static void obs_changed(rl__track_wait *w)
{
    obs_heard((obs_op *)((char *)w - offsetof(obs_op, tw)));
}

static void obs_record_changed(rl__track_wait *w)
{
    obs_heard((obs_op *)((char *)w - offsetof(obs_op, rtw)));
}

/* A failing wait's deadline came in its pause. */
static void obs_fail_end(rl__alock_pause *p)
{
    obs_op *op = (obs_op *)((char *)p - offsetof(obs_op, pause));

    op->paused = 0;
    obs_finish(op, failed_wait(op, rl__now_us()));
}

/* The loop was freed during the pause. */
static void obs_gone(rl__alock_pause *p)
{
    obs_finish(
        (obs_op *)((char *)p - offsetof(obs_op, pause)),
        rl__err(REDISLOCK_ECANCELED, "the loop was freed while observing"));
}

/* A wait's read failed with err (read_again's): arms the pause before
 * the next read and returns REDISLOCK_OK, or, at the deadline, the
 * error the wait ends with. */
static redislock_err obs_retry(obs_op *op, redislock_err err, int64_t now)
{
    int64_t pause;

    if (op->fails++ == 0)
        op->failing_since_us = now;
    op->failed = err;
    snprintf(op->fail_detail, sizeof op->fail_detail, "%s",
             redislock_errdetail());
    if (now >= op->deadline_us)
        return op->fails == 1 ? rl__err(err, "%s", op->fail_detail)
                              : failed_wait(op, now);
    pause = rl__jitter(rl__retry_delay(REDISLOCK_RETRY_EXPONENTIAL, FAIL_MIN_MS,
                                       FAIL_MAX_MS, op->fails),
                       rl__jitter_rand()) *
            1000;
    op->quiet = 0;
    /* A read due at the deadline or after it is not sent: the wait ends
     * then, failed. */
    op->pause.fire = now + pause < op->deadline_us ? obs_wake : obs_fail_end;
    op->pause.gone = obs_gone;
    err = rl__alock_pause_arm(op->al, &op->pause,
                              now + pause < op->deadline_us ? now + pause
                                                            : op->deadline_us);
    op->paused = err == REDISLOCK_OK;
    return err;
}

static void obs_got(void *arg, redislock_err err, const rl__reply *r)
{
    obs_op *op = arg;
    seen s;
    int64_t now, at;

    if (err == REDISLOCK_OK)
        err = rl__reply_check(r, rl__script_elect.name);
    if (err == REDISLOCK_OK)
        err = decode(r, &s);
    op->reading = 0;
    now = rl__now_us();
    /* A wait rides through what a later read may not meet (a failover's
     * master being replaced, a server restarting): only its deadline
     * ends it then. */
    if (err != REDISLOCK_OK && !op->leader && read_again(err)) {
        if ((err = obs_retry(op, err, now)) != REDISLOCK_OK)
            obs_finish(op, err);
        return;
    }
    if (err == REDISLOCK_OK)
        err = op->leader ? now_state(op->l, &op->in, &s, REDISLOCK_CHANGE_NONE)
                         : next_change(op->l, &op->in, &s);
    op->fails = 0;
    if (err != REDISLOCK_OK || op->leader ||
        op->in.kind != REDISLOCK_CHANGE_NONE || now >= op->deadline_us) {
        obs_finish(op, err);
        return;
    }
    /* A tracked read waits for the key's notice (at once when one came
     * while it was out); an untracked one polls. */
    op->quiet = op->tracked && !op->resent;
    at = now + (op->quiet ? (op->missed ? 0 : QUIET_US) : POLL_US);
    if (at > op->deadline_us)
        at = op->deadline_us;
    op->missed = 0;
    op->pause.fire = obs_wake;
    op->pause.gone = obs_gone;
    if ((err = rl__alock_pause_arm(op->al, &op->pause, at)) != REDISLOCK_OK)
        obs_finish(op, err);
    else
        op->paused = 1;
}

/* Reads the record after the observer's n, and the key. */
static redislock_err obs_read(obs_op *op)
{
    char after[24];
    const char *args[2] = {"read", after};
    size_t lens[2] = {4, 0};
    redislock_err err;

    snprintf(after, sizeof after, "%lld",
             op->leader ? -1LL : (long long)op->in.n);
    lens[1] = strlen(after);
    op->tracked = 0;
    op->reading = 1;
    /* One look needs no notices; a wait does. */
    if (op->leader || op->deadline_us <= rl__now_us())
        err = rl__elect_send(op->al, op->l, args, lens, 2, obs_got, op);
    else
        err = rl__elect_send_tracked(op->al, op->l, args, lens, 2, &op->tw,
                                     &op->tracked, &op->resent, obs_got, op);
    /* The record is in the key's slot, so on the key's node. */
    if (err == REDISLOCK_OK && op->tw.t != NULL)
        rl__track_join(op->tw.t, &op->rtw);
    if (err != REDISLOCK_OK)
        op->reading = 0;
    return err;
}

static redislock_err obs_start(rl__alock *al, redislock_lock *l,
                               redislock_leader_info *info, size_t info_size,
                               int leader, int64_t timeout_ms, rl__alock_cb cb,
                               void *arg)
{
    obs_op *op;
    redislock_err err;

    if (l == NULL || cb == NULL || info == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle, info or "
                                         "callback");
    if ((err = rl__abi_check(info_size, RL_LEADER_INFO_SIZE_1,
                             "redislock_leader_info")) != REDISLOCK_OK ||
        (err = rl__elect_check_lock(l)) != REDISLOCK_OK)
        return err;
    if (timeout_ms < 0)
        return rl__err(REDISLOCK_EINVAL,
                       "a negative timeout: 0 for one look, or the ms to "
                       "wait for a change");
    if ((op = calloc(1, sizeof *op)) == NULL)
        return REDISLOCK_ENOMEM;
    *op = (obs_op){.al = al,
                   .l = l,
                   .out = info,
                   .out_size = info_size,
                   .leader = leader,
                   .tw = {.changed = obs_changed},
                   .rtw = {.changed = obs_record_changed},
                   .cb = cb,
                   .arg = arg};
    rl__abi_in(&op->in, sizeof op->in, info, info_size);
    if (op->in.n < 0)
        op->in.n = 0;
    if (!leader && timeout_ms > 0 &&
        (op->record = rl__helper_join(l->base, l->baselen, "elect", NULL,
                                      &op->rtw.keylen)) == NULL) {
        obs_free(op);
        return REDISLOCK_ENOMEM;
    }
    op->rtw.key = op->record;
    op->deadline_us = rl__now_us() + timeout_ms * 1000;
    /* A wait that starts while the server cannot be read waits for it. */
    if ((err = obs_read(op)) != REDISLOCK_OK && !leader && read_again(err))
        err = obs_retry(op, err, rl__now_us());
    if (err != REDISLOCK_OK)
        obs_free(op);
    return err;
}

redislock_err rl__alock_leader(rl__alock *al, redislock_lock *l,
                               redislock_leader_info *info, size_t info_size,
                               rl__alock_cb cb, void *arg)
{
    return obs_start(al, l, info, info_size, 1, 0, cb, arg);
}

redislock_err rl__alock_observe(rl__alock *al, redislock_lock *l,
                                redislock_leader_info *info, int64_t timeout_ms,
                                size_t info_size, rl__alock_cb cb, void *arg)
{
    return obs_start(al, l, info, info_size, 0, timeout_ms, cb, arg);
}

/* A blocking call's arguments. */
typedef struct obs_args {
    redislock_leader_info *info;
    size_t size;
    int64_t timeout_ms;
    int leader;
} obs_args;

static redislock_err start_obs(rl__alock *al, redislock_lock *l, void *arg,
                               rl__alock_cb cb, void *cbarg)
{
    const obs_args *a = arg;

    return obs_start(al, l, a->info, a->size, a->leader, a->timeout_ms, cb,
                     cbarg);
}

redislock_err redislock_leader_sized(redislock_lock *l,
                                     redislock_leader_info *info,
                                     size_t info_size)
{
    obs_args a = {info, info_size, 0, 1};

    if (l == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle");
    return rl__engine_call(l, start_obs, &a, 0);
}

redislock_err redislock_observe_sized(redislock_lock *l,
                                      redislock_leader_info *info,
                                      int64_t timeout_ms, size_t info_size)
{
    obs_args a = {info, info_size, timeout_ms, 0};

    if (l == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL lock handle");
    return rl__engine_call(l, start_obs, &a, 0);
}
