#include "script.h"

#include <stdio.h>
#include <string.h>

#include "error.h"

int rl__script_is_noscript(const rl__reply *r)
{
    return r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0;
}

int rl__script_argv(const rl__script *s, int eval, int nkeys, const char **keys,
                    const size_t *klens, int nargs, const char **args,
                    const size_t *lens, char nk[8], const char **argv,
                    size_t *argl)
{
    int i;

    if (nkeys + nargs > RL_SCRIPT_MAX_ARGS || nkeys > 9)
        return -1;
    argv[0] = eval ? "EVAL" : "EVALSHA";
    argl[0] = eval ? 4 : 7;
    argv[1] = eval ? s->source : s->sha1;
    argl[1] = strlen(argv[1]);
    argv[2] = nk;
    argl[2] = (size_t)snprintf(nk, 8, "%d", nkeys);
    for (i = 0; i < nkeys; i++) {
        argv[3 + i] = keys[i];
        argl[3 + i] = klens[i];
    }
    for (i = 0; i < nargs; i++) {
        argv[3 + nkeys + i] = args[i];
        argl[3 + nkeys + i] = lens[i];
    }
    return 3 + nkeys + nargs;
}

/* EVALSHA, falling back to EVAL on NOSCRIPT; or EVAL at once. */
static redislock_err run(rl__conn *c, const rl__script *s, int eval_first,
                         int nkeys, const char **keys, const size_t *klens,
                         int nargs, const char **args, const size_t *lens,
                         rl__reply **out)
{
    const char *argv[RL_SCRIPT_ARGV_MAX];
    size_t argl[RL_SCRIPT_ARGV_MAX];
    char nk[8];
    redislock_err err;
    int argc = rl__script_argv(s, eval_first, nkeys, keys, klens, nargs, args,
                               lens, nk, argv, argl);

    if (argc < 0)
        return rl__err(REDISLOCK_EINVAL, "too many script arguments");
    err = rl__conn_command(c, argc, argv, argl, out);
    if (!eval_first && err == REDISLOCK_OK && rl__script_is_noscript(*out)) {
        rl__reply_free(*out);
        rl__script_argv(s, 1, nkeys, keys, klens, nargs, args, lens, nk, argv,
                        argl);
        err = rl__conn_command(c, argc, argv, argl, out);
    }
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
