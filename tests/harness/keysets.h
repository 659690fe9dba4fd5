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

/* How many of the n keys exist (EXISTS). */
long long th_keys_existing(redisContext *r, const char *const *keys, size_t n);

/* How many of the n keys hold token (MGET). */
size_t th_keys_holding(redisContext *r, const char *const *keys, size_t n,
                       const char *token);

/* The value of key's fencing counter ("K{K}:rl-fence", or "K:rl-fence"
 * when K has a hash tag of its own); 0 when there is none. */
long long th_fence_counter(redisContext *r, const char *key);

/* Its PTTL: ms left, -1 no expiry, -2 no counter. */
long long th_fence_counter_pttl(redisContext *r, const char *key);

#endif
