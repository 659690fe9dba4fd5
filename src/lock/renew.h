/*
 * Renewals by node: the due renewals of many locks of one server (one
 * hash slot of a cluster) as one request, renew.lua's, and its reply
 * given back lock by lock. The engine (alock.c) decides which locks go
 * together and when; this builds and reads the request.
 */
#ifndef RL_RENEW_H
#define RL_RENEW_H

#include <stddef.h>

#include "aconn.h"
#include "lock.h"
#include "quorum.h"
#include "request.h"

/* The most keys one renewal request carries (a lock's key, each of a
 * set's): up to 20,480 words, and 17-25 ms of a Redis 7.0 server's time
 * on the shared VM the benchmarks ran on, during which its other clients
 * wait: the trade docs/ARCHITECTURE.md's "Renewals by node" states. */
#define RL_RENEW_BATCH 4096

/* A renewal request of several locks: q, and the storage its keys and
 * arguments point into (rl__renew_free). */
typedef struct rl__renew_req {
    rl__request q;
    const char **v; /* the keys, then four arguments per lock */
    size_t *len;
    char *buf; /* the TTLs', fences' and sets' text */
} rl__renew_req;

/* How many keys l's renewal carries: its key, or each of a set's. Any
 * lock whose keys one request reaches (not a set spread over several
 * servers or slots) can go in a renewal request. */
size_t rl__renew_keys(const redislock_lock *l);

/* Fills *out with the renewal of the n locks ls (2 or more, of
 * RL_RENEW_BATCH keys at most, all of one server or slot). */
redislock_err rl__renew_request(redislock_lock *const *ls, size_t n,
                                rl__renew_req *out);

/* A renewal request built entry by entry: room in *out for n entries
 * of nkeys keys in all, then each entry's rl__renew_add. */
redislock_err rl__renew_begin(size_t n, size_t nkeys, rl__renew_req *out);

/* Adds to r the renewal of the n keys names with args and lens,
 * extend.lua's four arguments (the token, the TTL, the format, the
 * fence); set: as a set of them, set_extend.lua's (the format then
 * unused). The token must outlive r; the rest is copied. */
void rl__renew_add(rl__renew_req *r, const rl__lockname *names, int n, int set,
                   const char *const *args, const size_t *lens);

void rl__renew_free(rl__renew_req *r);

/* Whether r, the reply to a renewal request of n locks, answers each of
 * them; if not (an error reply, another shape), the request failed as a
 * whole and each lock's renewal goes alone. */
int rl__renew_answered(const rl__reply *r, size_t n);

/* What r's answer for its i-th lock says (as its own extend's reply:
 * extend.lua's, or a set's set_extend.lua's). */
const rl__reply *rl__renew_answer(const rl__reply *r, size_t i);

/* Redlock's renewals by node: whether every server's reply in the
 * round r of a renewal request of n locks answers each lock (a server
 * that failed counts as it would for each lock alone). */
int rl__renew_round_answered(const rl__round *r, size_t n);

/* Lock i's answers in the round r (rl__renew_round_answered) as the
 * round of its own extend would have them, into *one: it points into r's
 * replies and is not freed. */
void rl__renew_round_answer(const rl__round *r, size_t i, rl__round *one);

/*
 * A spread set's renewals by node: the extends a set's chains send to
 * their groups (agroup.c, set_extend.lua's) while the engine gathers
 * them (renewals come due together) are kept as parcels, then sent as
 * one renewal request per node and slot, each group a set entry; each
 * parcel's answer goes to its sender as the reply to its own request
 * would (the guards' answers too). A request refused as a whole sends
 * each parcel alone.
 */
typedef struct rl__parcel rl__parcel;

typedef struct rl__parcels {
    rl__parcel **p;
    size_t n, cap;
} rl__parcels;

typedef struct rl__parcel_io {
    void *ctx;
    const redislock_client *c; /* whose guards the requests carry */
    /* Sends the renewal request q to node (routed by its first key). */
    redislock_err (*send)(void *ctx, void *node, const rl__request *q,
                          rl__aconn_cb cb, void *arg);
    /* Sends a parcel's own request q, of the keys names, to node. */
    redislock_err (*alone)(void *ctx, void *node, const rl__lockname *names,
                           int n, const rl__request *q, rl__aconn_cb cb,
                           void *arg);
} rl__parcel_io;

/* Keeps in box the extend q of the n keys names (one group of a set, on
 * node and slot; cb and arg its sender's); its keys are copied, its
 * arguments and guards' answers must outlive the reply. An error: not
 * kept (the caller sends it). */
redislock_err rl__parcel_keep(rl__parcels *box, void *node, unsigned slot,
                              const rl__lockname *names, int n,
                              const rl__request *q, rl__aconn_cb cb, void *arg);

/* Sends what box keeps and empties it (what it had allocated freed);
 * each parcel's cb is called once, from the reply (or from here when it
 * could not be sent). */
void rl__parcels_send(rl__parcels *box, const rl__parcel_io *io);

#endif
