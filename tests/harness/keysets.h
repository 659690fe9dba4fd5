/*
 * Reading sets of keys on a server, for the tests of sets of keys
 * (redislock_lock_new_multi): how many exist, how many hold a token, and
 * a key's fencing counter. Each read is one command, so it sees one of
 * the server's steps.
 */
#ifndef TH_KEYSETS_H
#define TH_KEYSETS_H

#include <hiredis.h>
#include <stddef.h>

#include "fixture.h"

/* How many of the n keys exist (EXISTS). */
long long th_keys_existing(redisContext *r, const char *const *keys, size_t n);

/* How many of the n keys hold token (MGET). */
size_t th_keys_holding(redisContext *r, const char *const *keys, size_t n,
                       const char *token);

/* The fencing counter of the locks without a ':' in their keys, and the
 * end of every other's: the locks of a namespace (the key up to its last
 * ':') share one (rl__fence_name). */
#define TH_FENCE_COUNTER "redislock:rl-fence"

/* The name of key's fencing counter on a server that is not in a
 * cluster. */
void th_fence_counter_name(const char *key, char *name, size_t size);

/* The value of key's fencing counter on a server that is not in a
 * cluster; 0 when there is none. */
long long th_fence_counter(redisContext *r, const char *key);

/* The name of key's fencing counter in a cluster: its namespace's, with
 * a tag of key's slot. */
void th_cluster_fence_name(const char *key, char *name, size_t size);

/* Its PTTL: ms left, -1 no expiry, -2 no counter. */
long long th_fence_counter_pttl(redisContext *r, const char *key);

/* Over the n servers r of a sharded client c: the one key lands on
 * (found by taking a plain lock of it and looking; -1 when none has it),
 * and keys "<prefix>:<i>" sorted by server, up to 3 of each into
 * keys[server][], their counts into got[]. */
int th_shard_of(redisContext *const *r, int n, redislock_client *c,
                const char *key);
void th_keys_by_server(redisContext *const *r, int n, redislock_client *c,
                       const char *prefix, char keys[][3][24], int *got);

/* Over e's servers: how many of the n keys hold token, and how many lock
 * keys there are (th_lock_keys). */
size_t th_held_anywhere(th_servers *e, const char *const *k, size_t n,
                        const char *token);
long long th_lock_keys_anywhere(th_servers *e);

#endif
