/*
 * Lua scripts, embedded at build time from src/lua with their SHA1. They
 * are called by EVALSHA; a server that lacks one (after a restart or SCRIPT
 * FLUSH) answers NOSCRIPT, and the full source is sent once with EVAL.
 */
#ifndef RL_SCRIPT_H
#define RL_SCRIPT_H

#include <stddef.h>

#include "conn.h"

typedef struct rl__script {
    const char *name;
    const char *sha1;
    const char *source;
} rl__script;

extern const rl__script rl__script_acquire;
extern const rl__script rl__script_fair;
extern const rl__script rl__script_leave;
extern const rl__script rl__script_release;
extern const rl__script rl__script_extend;
extern const rl__script rl__script_inspect;

#define RL_SCRIPT_MAX_ARGS 8

/* Runs s with one key and nargs arguments (binary-safe) and returns its
 * reply, or an error for an error reply. */
redislock_err rl__script_run(rl__conn *c, const rl__script *s,
                             const char *key, size_t keylen, int nargs,
                             const char **args, const size_t *lens,
                             rl__reply **out);

#endif
