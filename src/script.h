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
    int eval_only; /* always sent whole (see rl__script_eval) */
} rl__script;

extern const rl__script rl__script_acquire;
extern const rl__script rl__script_fair;
extern const rl__script rl__script_leave;
extern const rl__script rl__script_abandon;
extern const rl__script rl__script_release;
extern const rl__script rl__script_extend;
extern const rl__script rl__script_inspect;
extern const rl__script rl__script_fenced_set;

#define RL_SCRIPT_MAX_ARGS 12
#define RL_SCRIPT_ARGV_MAX (3 + RL_SCRIPT_MAX_ARGS)

/* Fills argv/argl (RL_SCRIPT_ARGV_MAX slots) with EVALSHA of s, or EVAL
 * when eval is set; nk holds the key count's text. Returns argc, or -1
 * for too many arguments. For callers that send a script themselves
 * (several servers at once, a pipeline after ASKING). */
int rl__script_argv(const rl__script *s, int eval, int nkeys, const char **keys,
                    const size_t *klens, int nargs, const char **args,
                    const size_t *lens, char nk[8], const char **argv,
                    size_t *argl);

/* Whether r is the NOSCRIPT error: the server lacks the script. */
int rl__script_is_noscript(const rl__reply *r);

/* Runs s with nkeys keys and nargs arguments (binary-safe, at most
 * RL_SCRIPT_MAX_ARGS in all) and returns its reply, or an error for an
 * error reply. */
redislock_err rl__script_run_n(rl__conn *c, const rl__script *s, int nkeys,
                               const char **keys, const size_t *klens,
                               int nargs, const char **args, const size_t *lens,
                               rl__reply **out);

/* With one key, by EVAL at once: for a rare call that must not spend a
 * round trip on NOSCRIPT (the abandon after a lost reply). */
redislock_err rl__script_eval(rl__conn *c, const rl__script *s, const char *key,
                              size_t keylen, int nargs, const char **args,
                              const size_t *lens, rl__reply **out);

/* The same with one key. */
redislock_err rl__script_run(rl__conn *c, const rl__script *s, const char *key,
                             size_t keylen, int nargs, const char **args,
                             const size_t *lens, rl__reply **out);

#endif
