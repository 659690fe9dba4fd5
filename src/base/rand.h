/* Randomness: tokens from getrandom(2), and a cheap per-thread generator for
 * jitter that is seeded from it. */
#ifndef RL_RAND_H
#define RL_RAND_H

#include <stddef.h>
#include <stdint.h>

/* Token length in random bytes (128 bits) and as lowercase hex. */
#define RL_TOKEN_BYTES 16
#define RL_TOKEN_HEXLEN (2 * RL_TOKEN_BYTES)

/* A plain lock's token: this prefix, then RL_TOKEN_HEXLEN hex digits. The
 * prefix tells waiters that the holder is a redislock client, whose
 * release wakes them (see rl_wakes in lua/lib.lua). */
#define RL_LOCK_TOKEN_PREFIX "rl1-"
#define RL_LOCK_TOKEN_LEN (sizeof RL_LOCK_TOKEN_PREFIX - 1 + RL_TOKEN_HEXLEN)
/* The same length, for a holder whose release may go as the server's own
 * compare-and-delete, which wakes nobody: a waiter marks its value, so
 * that the compare fails and the release script runs (rl_mark_holder in
 * lua/lib.lua). */
#define RL_NATIVE_TOKEN_PREFIX "rl2-"

/* Fills buf with len bytes from getrandom(2). Returns 0, or -1 with errno. */
int rl__random_bytes(void *buf, size_t len);

/* Writes a fresh token of RL_TOKEN_HEXLEN hex digits plus NUL into out.
 * Returns 0, or -1 with errno. */
int rl__token(char out[RL_TOKEN_HEXLEN + 1]);

/* Writes a fresh plain-lock token (RL_LOCK_TOKEN_LEN chars plus NUL).
 * Returns 0, or -1 with errno. */
int rl__lock_token(char out[RL_LOCK_TOKEN_LEN + 1]);

/* The same with RL_NATIVE_TOKEN_PREFIX when native is set. */
int rl__lock_token_as(char out[RL_LOCK_TOKEN_LEN + 1], int native);

/* Whether t is a plain-lock token of RL_NATIVE_TOKEN_PREFIX. */
int rl__token_native(const char *t);

/* A jitter value; not for secrets. */
uint64_t rl__jitter_rand(void);

#endif
