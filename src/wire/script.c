#include "script.h"

#include <stdio.h>
#include <string.h>

#include "error.h"

int rl__script_is_noscript(const rl__reply *r)
{
    return r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0;
}

int rl__script_fn_reply(const rl__reply *r)
{
    if (r->type != REDIS_REPLY_ERROR)
        return RL_FN_RAN;
    if (strncmp(r->str, "ERR Function not found", 22) == 0)
        return RL_FN_MISSING;
    /* "ERR unknown command 'FCALL'..." (before 7.0), and the ACL's refusal
     * of the command itself ("NOPERM ... run the 'fcall' command"), not of
     * a key, which would refuse EVALSHA alike. */
    if (strncmp(r->str, "ERR unknown command", 19) == 0 ||
        (strncmp(r->str, "NOPERM", 6) == 0 && strstr(r->str, "'fcall'")))
        return RL_FN_REFUSED;
    return RL_FN_RAN;
}

int rl__script_argv(const rl__script *s, rl__script_via via, int nkeys,
                    const char *const *keys, const size_t *klens, int nargs,
                    const char *const *args, const size_t *lens, char nk[8],
                    const char **argv, size_t *argl)
{
    static const char *const verb[3] = {"FCALL", "EVALSHA", "EVAL"};
    int i;

    if (nkeys < 0 || nargs < 0 || nkeys + nargs > RL_SCRIPT_MAX_ARGS)
        return -1;
    argv[0] = verb[via];
    argl[0] = strlen(argv[0]);
    argv[1] = via == RL_VIA_FCALL     ? s->fname
              : via == RL_VIA_EVALSHA ? s->sha1
                                      : s->source;
    argl[1] = strlen(argv[1]);
    argv[2] = nk;
    if (nkeys < 100) {
        /* Two digits at most, without snprintf's cost. */
        argl[2] = nkeys >= 10 ? 2 : 1;
        nk[0] = (char)(nkeys >= 10 ? '0' + nkeys / 10 : '0' + nkeys);
        nk[1] = (char)(nkeys >= 10 ? '0' + nkeys % 10 : '\0');
        nk[2] = '\0';
    } else {
        argl[2] = (size_t)snprintf(nk, 8, "%d", nkeys);
    }
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
