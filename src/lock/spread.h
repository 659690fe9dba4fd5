/*
 * The steps of a set of keys spread over several servers or hash slots
 * (spread.c's algorithm), which both drivers take: the blocking calls
 * one request after another, the event loop's (agroup.c) on its loop.
 * The groups; one attempt, group after group, and the raising of the
 * earlier groups' fencing counters to the set's token; the owner
 * scripts' answers of every group combined. The decisions live here, the
 * sending with the driver.
 */
#ifndef RL_SPREAD_H
#define RL_SPREAD_H

#include "algo.h"

/* The number of l's groups (l->algo is rl__algo_spread), and group g's
 * keys, *n of them, which one script reaches. */
int rl__spread_ngroups(const redislock_lock *l);
const rl__lockname *rl__spread_group(const redislock_lock *l, int g, int *n);

/* One attempt: set_acquire.lua's request for the group it is at (q, the
 * storage of its arguments here; the keys are the group's), the tokens
 * of the groups taken so far and what their guards confirmed. */
typedef struct rl__spread_try {
    char ttl[24], mark[24], floor[24];
    const char *args[7];
    size_t lens[7];
    rl__request q;
    int g; /* the group to take next; the number of groups once all are */
    int64_t fences[REDISLOCK_SET_MAX];
    rl__acks acks;
} rl__spread_try;

void rl__spread_try_start(const rl__try *t, rl__spread_try *st);

/* Group st->g's reply r, or its failure err (r NULL). REDISLOCK_OK: it
 * was taken, and st->g moved on. REDISLOCK_EHELD: refused, taking none of
 * it; l's waiting fields name the key to wait behind. Else the failure:
 * that group's outcome is unknown (an abandon's to undo), st->g stays.
 * The caller sets l->acks from the request's guards first (rl__lock_acks). */
redislock_err rl__spread_try_group(redislock_lock *l, rl__spread_try *st,
                                   redislock_err err, const rl__reply *r);

/* Once every group is taken, the groups before the last whose counters
 * are below the set's token have them raised (set_fence.lua): whether
 * group g needs it, the request (the same for each: its keys are the
 * group's), and what a group's reply r or failure err says: REDISLOCK_OK,
 * REDISLOCK_EHELD (a key no longer held the token: its lease ended while
 * the later groups were taken), or the failure. */
typedef struct rl__spread_fence {
    char v[24], ttl[24];
    const char *args[3];
    size_t lens[3];
    rl__request q;
} rl__spread_fence;

int rl__spread_fence_needed(const redislock_lock *l, const rl__spread_try *st,
                            int g);
void rl__spread_fence_start(const rl__try *t, const rl__spread_try *st,
                            rl__spread_fence *f);
redislock_err rl__spread_fence_answer(redislock_err err, const rl__reply *r);

/* The attempt ends with err (the groups', then the fences'): the lock
 * granted on REDISLOCK_OK; on REDISLOCK_EHELD from the fences, the key
 * counted as free now. Every other way the caller undoes the groups
 * taken (st->g of them, and after the fences every one). */
void rl__spread_try_end(redislock_lock *l, rl__spread_try *st,
                        redislock_err err);

/* The owner scripts (set_release.lua, set_extend.lua) of every group,
 * answered in any order: each group's answer added, then the outcome as
 * rl__algo's owner gives it. An extend that found the set lost (a group
 * gone or another owner's) has lengthened the groups that still held it:
 * the caller releases those (rl__spread_tally_undo), so that a lost set
 * holds nothing past its old lease. */
typedef struct rl__spread_tally {
    int extend;
    int added;
    long long least;
    unsigned lengthened;
    redislock_err first;
    rl__acks acks;
} rl__spread_tally;

void rl__spread_tally_start(rl__spread_tally *y, const rl__script *s);
/* Group g's reply r or failure err; for an extend the caller set l->acks
 * from the request's guards first (rl__lock_acks). */
void rl__spread_tally_add(redislock_lock *l, rl__spread_tally *y, int g,
                          redislock_err err, const rl__reply *r);
redislock_err rl__spread_tally_end(redislock_lock *l, rl__spread_tally *y,
                                   long long *n);
int rl__spread_tally_undo(const rl__spread_tally *y, int g);

#endif
