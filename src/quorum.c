#include "quorum.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "error.h"

/* Records server i's failure, keeping the detail rl__err wrote. */
static void set_failure(rl__round *r, size_t i, redislock_err err)
{
    r->err[i] = err;
    snprintf(r->detail[i], sizeof r->detail[i], "%s", redislock_errdetail());
}

/* Borrows one connection per server; a server that cannot be reached
 * fails here and takes no part. */
static void borrow_all(redislock_client *c, const int *only, rl__round *r,
                       rl__conn **conns)
{
    redislock_err err;
    size_t i;

    for (i = 0; i < r->n; i++) {
        conns[i] = NULL;
        if (only != NULL && !only[i])
            continue;
        err = rl__pool_borrow(rl__client_pool(c, i), &conns[i]);
        if (err != REDISLOCK_OK)
            set_failure(r, i, err);
    }
}

/* Sends the script (EVALSHA, or EVAL where eval[i]) to every server that
 * has a connection and no answer yet. */
static void send_round(rl__round *r, rl__conn **conns, const int *eval,
                       int64_t timeout_ms, const rl__script *s, const char *key,
                       size_t keylen, int nargs, const char **args,
                       const size_t *lens)
{
    const char *argv[RL_MAX_QUORUM][RL_SCRIPT_ARGV_MAX];
    size_t argl[RL_MAX_QUORUM][RL_SCRIPT_ARGV_MAX];
    char nk[RL_MAX_QUORUM][8];
    rl__cmd cmds[RL_MAX_QUORUM];
    rl__par parts[RL_MAX_QUORUM];
    int64_t deadline = rl__now_us() + timeout_ms * 1000;
    size_t i;

    memset(parts, 0, sizeof parts);
    for (i = 0; i < r->n; i++) {
        if (conns[i] == NULL || r->reply[i] != NULL || r->err[i] != 0)
            continue;
        cmds[i].argc = rl__script_argv(s, eval[i], 1, &key, &keylen, nargs,
                                       args, lens, nk[i], argv[i], argl[i]);
        cmds[i].argv = argv[i];
        cmds[i].lens = argl[i];
        parts[i] = (rl__par){conns[i],     1, &cmds[i], &r->reply[i], deadline,
                             REDISLOCK_OK, 0};
    }
    rl__conn_exec_par(parts, r->n);
    for (i = 0; i < r->n; i++)
        if (parts[i].c != NULL && parts[i].err != REDISLOCK_OK) {
            r->reply[i] = NULL;
            set_failure(r, i, parts[i].err);
        }
}

/* Servers that lacked the script get it whole; error replies become
 * failures. Returns whether any server needs the script sent again. */
static int sort_replies(rl__round *r, const rl__script *s, int *eval)
{
    redislock_err err;
    int again = 0;
    size_t i;

    for (i = 0; i < r->n; i++) {
        if (r->reply[i] == NULL)
            continue;
        if (!eval[i] && rl__script_is_noscript(r->reply[i])) {
            rl__reply_free(r->reply[i]);
            r->reply[i] = NULL;
            eval[i] = again = 1;
        } else if ((err = rl__reply_check(r->reply[i], s->name)) != 0) {
            set_failure(r, i, err);
            rl__reply_free(r->reply[i]);
            r->reply[i] = NULL;
        }
    }
    return again;
}

void rl__quorum_script(redislock_client *c, const int *only, int64_t timeout_ms,
                       const rl__script *s, const char *key, size_t keylen,
                       int nargs, const char **args, const size_t *lens,
                       rl__round *out)
{
    rl__conn *conns[RL_MAX_QUORUM];
    int eval[RL_MAX_QUORUM];
    size_t i;

    memset(out, 0, sizeof *out);
    out->n = rl__client_servers(c);
    for (i = 0; i < out->n; i++)
        eval[i] = s->eval_only;
    borrow_all(c, only, out, conns);
    send_round(out, conns, eval, timeout_ms, s, key, keylen, nargs, args, lens);
    if (sort_replies(out, s, eval)) {
        send_round(out, conns, eval, timeout_ms, s, key, keylen, nargs, args,
                   lens);
        sort_replies(out, s, eval);
    }
    for (i = 0; i < out->n; i++)
        if (conns[i] != NULL)
            rl__pool_give_back(rl__client_pool(c, i), conns[i]);
}

void rl__round_free(rl__round *r)
{
    size_t i;

    for (i = 0; i < r->n; i++) {
        rl__reply_free(r->reply[i]);
        r->reply[i] = NULL;
    }
}

static const char *outcome_word(redislock_err e)
{
    switch (e) {
    case REDISLOCK_OK:
        return "granted";
    case REDISLOCK_EHELD:
        return "busy";
    case REDISLOCK_EEXPIRED:
        return "gone";
    case REDISLOCK_ELOST:
        return "other owner";
    case REDISLOCK_ECONNECT:
        return "down";
    case REDISLOCK_ETIMEDOUT:
        return "timeout";
    default:
        return "error";
    }
}

void rl__outcomes_describe(redislock_client *c, const redislock_err *o,
                           size_t n, char *buf, size_t len)
{
    size_t i, used = 0;
    int w;

    buf[0] = '\0';
    for (i = 0; i < n && used < len; i++) {
        w = snprintf(buf + used, len - used, "%s%s %s", i ? ", " : "",
                     rl__client_pool(c, i)->name, outcome_word(o[i]));
        if (w < 0)
            break;
        used += (size_t)w;
    }
}
