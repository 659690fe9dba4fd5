#include "script.h"

#include <string.h>

#include "error.h"

static int is_noscript(const rl__reply *r)
{
    return r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0;
}

redislock_err rl__script_run(rl__conn *c, const rl__script *s,
                             const char *key, size_t keylen, int nargs,
                             const char **args, const size_t *lens,
                             rl__reply **out)
{
    const char *argv[4 + RL_SCRIPT_MAX_ARGS];
    size_t argl[4 + RL_SCRIPT_MAX_ARGS];
    redislock_err err;
    int i;

    if (nargs > RL_SCRIPT_MAX_ARGS)
        return rl__err(REDISLOCK_EINVAL, "too many script arguments");
    argv[0] = "EVALSHA";
    argv[1] = s->sha1;
    argv[2] = "1";
    argv[3] = key;
    argl[0] = 7;
    argl[1] = strlen(s->sha1);
    argl[2] = 1;
    argl[3] = keylen;
    for (i = 0; i < nargs; i++) {
        argv[4 + i] = args[i];
        argl[4 + i] = lens[i];
    }
    err = rl__conn_command(c, 4 + nargs, argv, argl, out);
    if (err != REDISLOCK_OK || !is_noscript(*out))
        goto check;
    rl__reply_free(*out);
    argv[0] = "EVAL";
    argl[0] = 4;
    argv[1] = s->source;
    argl[1] = strlen(s->source);
    err = rl__conn_command(c, 4 + nargs, argv, argl, out);
check:
    if (err == REDISLOCK_OK && (err = rl__reply_check(*out, s->name)) != 0) {
        rl__reply_free(*out);
        *out = NULL;
    }
    return err;
}
