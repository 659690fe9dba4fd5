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
#include "clock.h"
#include "elect.h"
#include "engine.h"
#include "error.h"
#include "keys.h"
#include "lock.h"

/* How often a wait reads the record again where the server does not
 * tell it of the key's change (tracking refused, or being set up). */
#define POLL_US 20000

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
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 6)
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
    if (s->entry) {
        o->kind = s->ekind;
        o->n = s->en;
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

    if (err == REDISLOCK_OK)
        rl__abi_out(op->out, op->out_size, &op->in, sizeof op->in);
    obs_free(op);
    cb(l, err, arg);
}

static redislock_err obs_read(obs_op *op);

static void obs_wake(rl__alock_pause *p)
{
    obs_op *op = (obs_op *)((char *)p - offsetof(obs_op, pause));
    redislock_err err;

    op->paused = 0;
    if ((err = obs_read(op)) != REDISLOCK_OK)
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

/* The loop was freed during the pause. */
static void obs_gone(rl__alock_pause *p)
{
    obs_finish(
        (obs_op *)((char *)p - offsetof(obs_op, pause)),
        rl__err(REDISLOCK_ECANCELED, "the loop was freed while observing"));
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
    if (err == REDISLOCK_OK)
        err = op->leader ? now_state(op->l, &op->in, &s, REDISLOCK_CHANGE_NONE)
                         : next_change(op->l, &op->in, &s);
    op->reading = 0;
    now = rl__now_us();
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
    if ((err = obs_read(op)) != REDISLOCK_OK)
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
