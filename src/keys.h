/*
 * Key names, pure: the Redis Cluster hash slot of a key (CRC16 of its hash
 * tag, as Redis computes it) and the names of a lock's helper keys (wake
 * list, fair queue, fence counter...). No I/O; unit-tested without a
 * server (tests/unit/test_keys.c).
 */
#ifndef RL_KEYS_H
#define RL_KEYS_H

#include <stddef.h>

/* The number of hash slots of a Redis Cluster. */
#define RL_CLUSTER_SLOTS 16384

/* Whether key has a hash tag: a '{' followed later by a '}' with at
 * least one byte between (only the first '{' and the first '}' after it
 * count). *off and *len get the tag's place when it has one. */
int rl__hash_tag(const void *key, size_t len, size_t *off, size_t *taglen);

/* The hash slot of key: CRC16 (XMODEM) of its hash tag when it has one,
 * else of the whole key, modulo 16384. */
unsigned rl__key_slot(const void *key, size_t len);

/*
 * The name of the helper key with suffix for key (malloc'ed, binary,
 * length in *outlen): "K{K}:rl-<suffix>", or "K:rl-<suffix>" for a key
 * with a hash tag of its own. They start with the key itself, so an ACL
 * that lets a user at "jobs:*" covers them, and their tag names the key's
 * slot, so a cluster keeps them on the lock key's node. With suffix ""
 * it is the base every helper name of the key starts with.
 */
char *rl__helper_name(const void *key, size_t len, const char *suffix,
                      size_t *outlen);

/* base (see rl__helper_name), then suffix, then token when not NULL:
 * malloc'ed and NUL-terminated, the length in *outlen. */
char *rl__helper_join(const char *base, size_t baselen, const char *suffix,
                      const char *token, size_t *outlen);

/* Whether the Redis key k is one of the library's helper keys. */
int rl__is_helper_key(const char *k, size_t len);

#endif
