#include "script.h"

#include <stdio.h>
#include <string.h>

#include "error.h"

int rl__script_is_noscript(const rl__reply *r)
{
    return r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0;
}

int rl__script_argv(const rl__script *s, int eval, int nkeys,
                    const char *const *keys, const size_t *klens, int nargs,
                    const char *const *args, const size_t *lens, char nk[8],
                    const char **argv, size_t *argl)
{
    int i;

    if (nkeys + nargs > RL_SCRIPT_MAX_ARGS || nkeys > RL_KEYS_MAX)
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
