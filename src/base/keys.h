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

/* A hash tag of at most 4 characters that hashes to slot. */
const char *rl__slot_tag(unsigned slot);

/*
 * The name of the fencing counter of the lock key key (keylen bytes),
 * malloc'ed and NUL-terminated, its length in *outlen. The keys that share
 * their part up to the last ':' share it, so that a server's locks of one
 * namespace keep one counter between them, and an ACL pattern such as
 * "jobs:*" that covers the locks covers it: "jobs:redislock:rl-fence" for
 * "jobs:report", "redislock:rl-fence" for a key without a ':'. In a
 * cluster (cluster non-zero) one per namespace and slot, the name ending
 * in a tag of the key's slot: "jobs:redislock:rl-fence{<tag>}"; a key
 * whose braces would move that name to another slot gets the lock's own
 * counter instead, base (rl__helper_name, baselen bytes) then "fence".
 */
char *rl__fence_name(const char *key, size_t keylen, const char *base,
                     size_t baselen, int cluster, size_t *outlen);

/* base (see rl__helper_name), then suffix, then token when not NULL:
 * malloc'ed and NUL-terminated, the length in *outlen. */
char *rl__helper_join(const char *base, size_t baselen, const char *suffix,
                      const char *token, size_t *outlen);

/* The part a key plays in a lock script's KEYS (each script lists its own
 * with rl_keys in src/lua; embed_lua.cmake turns that into these). */
enum {
    RL_KEY_LOCK,    /* the lock itself */
    RL_KEY_FENCE,   /* the fencing counter (rl__fence_name) */
    RL_KEY_WAITING, /* helper "waiting": someone waits, wake them */
    RL_KEY_WAKE,    /* helper "wake": the list ordinary waiters block on */
    RL_KEY_RWAKE,   /* helper "rwake": the one readers of a lock held shared
                       block on */
    RL_KEY_Q,       /* helper "q": the fair queue */
    RL_KEY_WS,      /* helper "ws": the fair waiters and the last hand-off */
    RL_KEY_SEQ,     /* helper "seq": the fair queue's sequence */
    RL_KEY_VOID,    /* helper "void:<request id>": an abandoned request */
    RL_KEY_ELECT,   /* helper "elect": an election's record (a stream) */
    RL_KEY_ROLES
};

/* The most keys a lock's layout names, and the most one script takes (a
 * set's script takes a layout's keys for each of its locks). */
#define RL_KEYS_LAYOUT_MAX 8
#define RL_KEYS_MAX 64

/* A lock's key, its helper base (rl__helper_name with suffix "") and
 * the name of its fencing counter (rl__fence_name). */
typedef struct rl__lockname {
    const char *key;
    size_t keylen;
    const char *base;
    size_t baselen;
    const char *fence;
    size_t fencelen;
} rl__lockname;

/* The bytes n names' strings take. */
size_t rl__lockname_size(const rl__lockname *names, int n);

/* Whether each of the n names counts its fencing tokens on the counter
 * fence (fencelen bytes): keys of one namespace share one. */
int rl__lockname_fence_is(const rl__lockname *names, int n, const char *fence,
                          size_t fencelen);

/* Copies n names into to, their strings into at (rl__lockname_size
 * bytes); returns the end of what it wrote. */
char *rl__lockname_copy(rl__lockname *to, const rl__lockname *names, int n,
                        char *at);

/* The KEYS of one script call, with the storage of their names. */
typedef struct rl__keyset {
    int n;
    const char *k[RL_KEYS_MAX];
    size_t len[RL_KEYS_MAX];
    char *buf;
} rl__keyset;

/*
 * Fills ks with the n keys of layout (RL_KEY_* roles) for the lock k (its
 * helpers named after its base; RL_KEY_VOID after req as well). Returns
 * 0, or -1 when out of memory, when the layout is too long or when it
 * wants req and req is NULL. Free with rl__keyset_free.
 */
int rl__keyset_make(rl__keyset *ks, const unsigned char *layout, int n,
                    const rl__lockname *k, const char *req);

/* The same for a set of locks: layout's keys for k, then each's (neach
 * roles, no RL_KEY_VOID) for every lock of more (nmore of them), in
 * order. */
int rl__keyset_make_set(rl__keyset *ks, const unsigned char *layout, int n,
                        const unsigned char *each, int neach,
                        const rl__lockname *k, const rl__lockname *more,
                        int nmore, const char *req);
void rl__keyset_free(rl__keyset *ks);

/* Whether the Redis key k is one of the library's helper keys (a fencing
 * counter included). */
int rl__is_helper_key(const char *k, size_t len);

#endif
