/*
 * Consistent hashing of keys over independent servers: a ring with
 * RL_RING_VNODES points per server, placed by hashing the server's name
 * (not its position in the list), so listing the servers in another order
 * routes every key the same way and adding one of N+1 servers moves about
 * 1/(N+1) of the keys. Pure: no I/O.
 */
#ifndef RL_SHARD_H
#define RL_SHARD_H

#include <stddef.h>
#include <stdint.h>

#define RL_RING_VNODES 160

typedef struct rl__ring {
    uint64_t *points; /* sorted */
    uint32_t *server; /* the server index of each point */
    size_t n;
} rl__ring;

/* Builds the ring for nnames servers. Returns 0, or -1 on memory
 * exhaustion. */
int rl__ring_build(rl__ring *r, const char *const *names, size_t nnames);

/* The server index for key. */
size_t rl__ring_lookup(const rl__ring *r, const void *key, size_t len);

void rl__ring_free(rl__ring *r);

#endif
