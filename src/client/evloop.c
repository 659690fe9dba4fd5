/*
 * The public event-loop API (redislock_loop(3)): redislock_loop_* over
 * a client's lock operations on a loop (alock.h), with the checks every
 * public call makes (NULL handles, the caller's struct sizes).
 */
#include <stdlib.h>

#include "abi.h"
#include "alock.h"
#include "error.h"
#include "keeper.h"

struct redislock_loop {
    rl__alock *al;
};

_Static_assert(REDISLOCK_WATCH_READ == RL_WATCH_READ &&
                   REDISLOCK_WATCH_WRITE == RL_WATCH_WRITE,
               "the public watch flags are the loop's");

redislock_err redislock_loop_new(redislock_loop **out, redislock_client *c,
                                 redislock_watch_cb watch,
                                 redislock_timer_cb timer, void *ctx)
{
    rl__loop_ops ops = {watch, timer, ctx};
    redislock_loop *lp;
    rl__alock_hand hand;
    redislock_err err;

    if (out != NULL)
        *out = NULL;
    if (out == NULL || c == NULL || watch == NULL || timer == NULL)
        return rl__err(REDISLOCK_EINVAL,
                       "NULL out, client, watch or timer callback");
    if ((lp = calloc(1, sizeof *lp)) == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    if ((err = rl__alock_new(c, &ops, &lp->al)) != REDISLOCK_OK) {
        free(lp);
        return err;
    }
    /* Its sweeps still under way when it is freed go to the keeper. */
    rl__keeper_hand(c, &hand);
    rl__alock_hand_to(lp->al, &hand);
    *out = lp;
    return REDISLOCK_OK;
}

void redislock_loop_free(redislock_loop *lp)
{
    if (lp == NULL)
        return;
    rl__alock_free(lp->al);
    free(lp);
}

void redislock_loop_io(redislock_loop *lp, int fd, int what)
{
    if (lp != NULL)
        rl__alock_io(lp->al, fd, what);
}

void redislock_loop_timeout(redislock_loop *lp)
{
    if (lp != NULL)
        rl__alock_timeout(lp->al);
}

redislock_err
redislock_loop_acquire_sized(redislock_loop *lp, redislock_lock *l,
                             const redislock_acquire_options *opts,
                             size_t opts_size, redislock_done_cb cb, void *arg)
{
    redislock_acquire_options o;
    redislock_err err;

    if (lp == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL loop");
    if ((err = rl__abi_acquire_options(&o, opts, opts_size)) != REDISLOCK_OK)
        return err;
    return rl__alock_acquire(lp->al, l, &o, cb, arg);
}

redislock_err redislock_loop_release(redislock_loop *lp, redislock_lock *l,
                                     int64_t hold_after_ms,
                                     redislock_done_cb cb, void *arg)
{
    if (lp == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL loop");
    return rl__alock_release(lp->al, l, hold_after_ms, cb, arg);
}

redislock_err redislock_loop_extend(redislock_loop *lp, redislock_lock *l,
                                    int64_t ttl_ms, redislock_done_cb cb,
                                    void *arg)
{
    if (lp == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL loop");
    return rl__alock_extend(lp->al, l, ttl_ms, cb, arg);
}

redislock_err redislock_loop_inspect_sized(redislock_loop *lp,
                                           redislock_lock *l,
                                           redislock_info *info,
                                           size_t info_size,
                                           redislock_done_cb cb, void *arg)
{
    if (lp == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL loop");
    return rl__alock_inspect(lp->al, l, info, info_size, cb, arg);
}

redislock_err redislock_loop_revoke(redislock_loop *lp, redislock_lock *l,
                                    const char *reason, redislock_done_cb cb,
                                    void *arg)
{
    if (lp == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL loop");
    return rl__alock_revoke(lp->al, l, reason, cb, arg);
}

redislock_err redislock_loop_sequencer(redislock_loop *lp, redislock_lock *l,
                                       char *buf, size_t size,
                                       redislock_done_cb cb, void *arg)
{
    if (lp == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL loop");
    return rl__alock_sequencer(lp->al, l, buf, size, cb, arg);
}

redislock_err redislock_loop_check_sequencer(redislock_loop *lp,
                                             redislock_lock *l,
                                             const char *sequencer,
                                             redislock_done_cb cb, void *arg)
{
    if (lp == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL loop");
    return rl__alock_check_sequencer(lp->al, l, sequencer, cb, arg);
}

redislock_err
redislock_loop_campaign_sized(redislock_loop *lp, redislock_lock *l,
                              const char *value,
                              const redislock_acquire_options *opts,
                              size_t opts_size, redislock_done_cb cb, void *arg)
{
    redislock_acquire_options o;
    redislock_err err;

    if (lp == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL loop");
    if ((err = rl__abi_acquire_options(&o, opts, opts_size)) != REDISLOCK_OK)
        return err;
    return rl__alock_campaign(lp->al, l, value, &o, cb, arg);
}

redislock_err redislock_loop_proclaim(redislock_loop *lp, redislock_lock *l,
                                      const char *value, redislock_done_cb cb,
                                      void *arg)
{
    if (lp == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL loop");
    return rl__alock_proclaim(lp->al, l, value, cb, arg);
}

redislock_err redislock_loop_resign(redislock_loop *lp, redislock_lock *l,
                                    redislock_done_cb cb, void *arg)
{
    if (lp == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL loop");
    return rl__alock_resign(lp->al, l, cb, arg);
}

redislock_err redislock_loop_leader_sized(redislock_loop *lp, redislock_lock *l,
                                          redislock_leader_info *info,
                                          size_t info_size,
                                          redislock_done_cb cb, void *arg)
{
    if (lp == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL loop");
    return rl__alock_leader(lp->al, l, info, info_size, cb, arg);
}

redislock_err redislock_loop_observe_sized(redislock_loop *lp,
                                           redislock_lock *l,
                                           redislock_leader_info *info,
                                           int64_t timeout_ms, size_t info_size,
                                           redislock_done_cb cb, void *arg)
{
    if (lp == NULL)
        return rl__err(REDISLOCK_EINVAL, "NULL loop");
    return rl__alock_observe(lp->al, l, info, timeout_ms, info_size, cb, arg);
}

void redislock_loop_cancel(redislock_loop *lp, redislock_lock *l)
{
    if (lp != NULL)
        rl__alock_cancel(lp->al, l);
}
