#include "script.h"

#include <stdio.h>
#include <string.h>

#include "error.h"

static int is_noscript(const rl__reply *r)
{
    return r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0;
}

/* EVALSHA, falling back to EVAL on NOSCRIPT; or EVAL at once. */
static redislock_err run(rl__conn *c, const rl__script *s, int eval_first,
                         int nkeys, const char **keys, const size_t *klens,
                         int nargs, const char **args, const size_t *lens,
                         rl__reply **out)
{
    const char *argv[3 + RL_SCRIPT_MAX_ARGS];
    size_t argl[3 + RL_SCRIPT_MAX_ARGS];
    char nk[8];
    redislock_err err;
    int i;

    if (nkeys + nargs > RL_SCRIPT_MAX_ARGS || nkeys > 9)
        return rl__err(REDISLOCK_EINVAL, "too many script arguments");
    argv[0] = "EVALSHA";
    argv[1] = s->sha1;
    argv[2] = nk;
    argl[0] = 7;
    argl[1] = strlen(s->sha1);
    argl[2] = (size_t)snprintf(nk, sizeof nk, "%d", nkeys);
    for (i = 0; i < nkeys; i++) {
        argv[3 + i] = keys[i];
        argl[3 + i] = klens[i];
    }
    for (i = 0; i < nargs; i++) {
        argv[3 + nkeys + i] = args[i];
        argl[3 + nkeys + i] = lens[i];
    }
    if (eval_first)
        goto eval;
    err = rl__conn_command(c, 3 + nkeys + nargs, argv, argl, out);
    if (err != REDISLOCK_OK || !is_noscript(*out))
        goto check;
    rl__reply_free(*out);
eval:
    argv[0] = "EVAL";
    argl[0] = 4;
    argv[1] = s->source;
    argl[1] = strlen(s->source);
    err = rl__conn_command(c, 3 + nkeys + nargs, argv, argl, out);
check:
    if (err == REDISLOCK_OK && (err = rl__reply_check(*out, s->name)) != 0) {
        rl__reply_free(*out);
        *out = NULL;
    }
    return err;
}

redislock_err rl__script_run_n(rl__conn *c, const rl__script *s, int nkeys,
                               const char **keys, const size_t *klens,
                               int nargs, const char **args, const size_t *lens,
                               rl__reply **out)
{
    return run(c, s, 0, nkeys, keys, klens, nargs, args, lens, out);
}

redislock_err rl__script_eval(rl__conn *c, const rl__script *s, const char *key,
                              size_t keylen, int nargs, const char **args,
                              const size_t *lens, rl__reply **out)
{
    return run(c, s, 1, 1, &key, &keylen, nargs, args, lens, out);
}

redislock_err rl__script_run(rl__conn *c, const rl__script *s, const char *key,
                             size_t keylen, int nargs, const char **args,
                             const size_t *lens, rl__reply **out)
{
    return rl__script_run_n(c, s, 1, &key, &keylen, nargs, args, lens, out);
}
