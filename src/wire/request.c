#include "request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"

static const char *infov[2] = {"INFO", "replication"};

const char *rl__request_name(const rl__request *q)
{
    return q->s != NULL ? q->s->name : "the command";
}

/* The words (keys, then arguments) of q. */
static size_t words(const rl__request *q)
{
    return (size_t)q->nkeys + (size_t)q->nargs;
}

/* Room for the pointers and lengths of n words, aligned for them. */
static size_t table_bytes(size_t n)
{
    return n * (sizeof(const char *) + sizeof(size_t)) + sizeof(void *);
}

long rl__request_bytes(const rl__request *q)
{
    size_t i, n = words(q);
    long bytes = 0;

    if (q->nkeys < 0 || q->nargs < 0 || n > RL_SCRIPT_MAX_ARGS) {
        rl__err(REDISLOCK_EINVAL, "too many script arguments");
        return -1;
    }
    for (i = 0; i < n; i++)
        bytes += (long)(i < (size_t)q->nkeys ? q->klens[i]
                                             : q->lens[i - (size_t)q->nkeys]);
    return bytes + (long)table_bytes(n);
}

/* Copies q into *out: its keys' and arguments' pointers and lengths
 * into v and len (room for q's count of them), their bytes into data;
 * returns data past them. */
static char *copy_into(rl__request *out, const char **v, size_t *len,
                       const rl__request *q, char *data)
{
    int i, n = q->nkeys + q->nargs;

    *out = *q;
    for (i = 0; i < n; i++) {
        len[i] = i < q->nkeys ? q->klens[i] : q->lens[i - q->nkeys];
        v[i] = memcpy(data, i < q->nkeys ? q->keys[i] : q->args[i - q->nkeys],
                      len[i]);
        data += len[i];
    }
    out->keys = v;
    out->klens = len;
    out->args = v + q->nkeys;
    out->lens = len + q->nkeys;
    return data;
}

char *rl__request_copy(rl__request *o, const rl__request *q, char *data)
{
    size_t n = words(q);
    uintptr_t at = ((uintptr_t)data + sizeof(void *) - 1) &
                   ~(uintptr_t)(sizeof(void *) - 1);
    const char **v = (const char **)at;
    size_t *len = (size_t *)(v + n);

    copy_into(o, v, len, q, (char *)(len + n));
    return data + rl__request_bytes(q);
}

int rl__request_waitaof(const rl__request *q)
{
    return q->wait_aof_local > 0 || q->wait_aof_replicas > 0;
}

int64_t rl__request_wait_ms(const rl__request *q)
{
    return ((q->wait_replicas > 0) + rl__request_waitaof(q)) * q->wait_ms;
}

/* WAITAOF's answer r into q->aof_acked: [local, replicas]. */
static void take_aof(const rl__request *q, const rl__reply *r)
{
    int ok = r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
             r->element[0]->type == REDIS_REPLY_INTEGER &&
             r->element[1]->type == REDIS_REPLY_INTEGER;

    if (q->aof_acked == NULL)
        return;
    q->aof_acked[0] = ok ? r->element[0]->integer : -1;
    q->aof_acked[1] = ok ? r->element[1]->integer : -1;
}

/* A script request on the loop: its own copy of the keys and arguments,
 * for the EVAL that follows a NOSCRIPT, and its guards: WAIT and WAITAOF
 * sent behind the script, whose answers come before the script's reply
 * goes to the caller. */
typedef struct async_req {
    rl__aconn *c;
    rl__request q;      /* its copy of the request, guards included */
    rl__script_via via; /* how its script goes (a command: as EVAL) */
    /* 1: its library (FCALL) or its script (EVALSHA) is loaded before
     * it in the next round; 2: it was. */
    int load;
    int *fn; /* the node's Functions memo (rl__conn_cfg.fn), or NULL */
    /* The native compare-and-delete going in place of the script
     * (RL_CAP_*; RL_CAP_NONE: the script), and the node's memo of it. */
    int native;
    int *caps;
    /* 1: q's lean script goes in place of its script (rl__request's
     * lean), until an answer other than 1 sends the script. */
    int lean;
    /* The node's memo of COPY (rl__conn_cfg.copy; NULL: no COPY), and
     * the places of the COPY's keys in q's (copy_wake), -1 without;
     * tried: a native try was answered with anything but "released". */
    int *copy;
    int copy_from, copy_to;
    int tried;
    rl__aconn_cb cb;
    void *arg;
    int out;           /* commands sent whose callbacks are to come */
    int skip;          /* guards' answers of a round sent again */
    int guards;        /* guards' answers so far */
    int before_sent;   /* what goes before the script (send_before) */
    int all_sent;      /* REPLICAS_ALL's second WAIT */
    redislock_err err; /* the script's outcome */
    rl__reply *reply;  /* its reply, kept while the guards answer */
    char *detail;      /* the error detail of err (NULL: out of memory) */
    /* The copy's keys and arguments, then their lengths and bytes: only
     * as many as it has, so that a lock's request stays small enough
     * for malloc's per-thread cache (its arrays for the most a request
     * may have were 1.2 KB, its detail 512 bytes more). */
    const char *v[];
} async_req;

/* a's outcome err, and its detail, kept for when the outcome goes out
 * (the thread's detail may have changed by then). */
static void keep_err(async_req *a, redislock_err err, const char *detail)
{
    a->err = err;
    free(a->detail);
    a->detail = strdup(detail);
}

static void req_free(async_req *a)
{
    free(a->detail);
    free(a);
}

static redislock_err async_send(async_req *a);
static void async_end(async_req *a);

/* A second WAIT's answer (see async_end). */
static void async_all(void *arg, redislock_err err, const rl__reply *r)
{
    async_req *a = arg;

    a->out--;
    *a->q.acked =
        err == REDISLOCK_OK && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    async_end(a);
}

/* For a request that waits for every replica, once the first WAIT has
 * answered: a second WAIT when the master needs more replicas than it
 * asked for and got. Whether one was sent. */
static int wait_all_async(async_req *a)
{
    const rl__request *q = &a->q;
    const char *wv[3] = {"WAIT", NULL, NULL};
    char n[24], ms[24];

    if (q->all == NULL || q->need == NULL || q->acked == NULL || a->all_sent ||
        a->err != REDISLOCK_OK || *q->need <= q->wait_replicas ||
        *q->acked >= *q->need)
        return 0;
    a->all_sent = 1;
    snprintf(n, sizeof n, "%lld", *q->need);
    snprintf(ms, sizeof ms, "%lld", (long long)q->wait_ms);
    wv[1] = n;
    wv[2] = ms;
    if (rl__aconn_send_block(a->c, 3, wv, NULL, q->wait_ms, async_all, a) !=
        REDISLOCK_OK)
        return 0; /* the first WAIT's count stands: not enough */
    a->out++;
    return 1;
}

/* Every callback in: the script's outcome goes to the caller. */
static void async_end(async_req *a)
{
    if (a->out > 0 || wait_all_async(a))
        return;
    if (a->err != REDISLOCK_OK)
        rl__err(a->err, "%s", a->detail != NULL ? a->detail : "out of memory");
    a->cb(a->arg, a->err, a->err == REDISLOCK_OK ? a->reply : NULL);
    rl__reply_free(a->reply);
    req_free(a);
}

/* Whether the error reply r says the server will not run a's native
 * command at all: a server without it (or with it renamed), an ACL
 * without it, a form it does not know. */
static int native_refused(const rl__reply *r)
{
    static const char *const said[] = {
        "ERR unknown command", "ERR unknown subcommand", "NOPERM", "ERR syntax",
        "ERR wrong number of arguments"};
    size_t i;

    for (i = 0; i < sizeof said / sizeof *said; i++)
        if (strncmp(r->str, said[i], strlen(said[i])) == 0)
            return 1;
    return 0;
}

/* After a's native compare-and-delete answered r: whether the script
 * goes instead. Deleted (1) is the outcome. Anything else is the
 * script's to answer, so that the caller hears what it always heard:
 * 0 (not the token: a waiter's mark, another holder, the key gone), a
 * key of another type (WRONGTYPE from Valkey, "ERR Key should be of
 * string type" from Redis 8.6), and an error the script meets too
 * (MOVED, ASK, TRYAGAIN, READONLY, LOADING...: one round trip more, on
 * a path that is rare and slow already). A refusal also stops the
 * node's later releases trying. */
static int native_again(async_req *a, const rl__reply *r)
{
    if (r->type == REDIS_REPLY_INTEGER && r->integer == 1)
        return 0;
    if (r->type == REDIS_REPLY_ERROR && native_refused(r) && a->caps != NULL)
        __atomic_store_n(a->caps, -1, __ATOMIC_RELAXED);
    a->native = RL_CAP_NONE;
    a->tried = 1;
    return 1;
}

/* After a's lean script ran and answered r: whether q's script goes
 * instead. Released (1) is the outcome; anything else is the script's
 * to answer, as after a native compare. */
static int lean_again(async_req *a, const rl__reply *r)
{
    if (!a->lean || (r->type == REDIS_REPLY_INTEGER && r->integer == 1))
        return 0;
    a->lean = 0;
    a->load = 0;
    return 1;
}

/* The script a sends now: q's lean one, or q's own. */
static const rl__script *script_of(const async_req *a)
{
    return a->lean ? a->q.lean : a->q.s;
}

/*
 * Whether the reply r to a's script says it did not run for want of the
 * script on the server, and how it goes in the next round (a's via and
 * load set). By FCALL: a library not loaded (a new server, FUNCTION
 * FLUSH) is loaded, FUNCTION LOAD before the FCALL in one round trip;
 * FCALL refused (a server before 7.0, an ACL without it), or FUNCTION
 * LOAD refused, sends it by EVALSHA, and the node's memo says so for the
 * requests after it. By EVALSHA: a NOSCRIPT (a restart, SCRIPT FLUSH, a
 * failover) sends SCRIPT LOAD before the EVALSHA, in one round trip, since
 * a script EVAL leaves in the cache can be evicted (Redis 7.4 and Valkey
 * 8.0 keep only the last 500) and one loaded cannot; if the EVALSHA still
 * finds none (SCRIPT refused by an ACL), the script goes whole, by EVAL.
 */
static int again(async_req *a, const rl__reply *r)
{
    int fn;

    if (a->native != RL_CAP_NONE)
        return native_again(a, r);
    if (a->via == RL_VIA_FCALL) {
        fn = rl__script_fn_reply(r);
        if (fn == RL_FN_RAN)
            return lean_again(a, r);
        if (fn == RL_FN_MISSING && a->load == 0) {
            a->load = 1;
            return 1;
        }
        /* Refused, or still missing once loaded: no FUNCTION LOAD. */
        if (a->fn != NULL)
            __atomic_store_n(a->fn, -1, __ATOMIC_RELAXED);
        a->via = RL_VIA_EVALSHA;
        a->load = 0;
        return 1;
    }
    if (a->via != RL_VIA_EVALSHA || !rl__script_is_noscript(r))
        return lean_again(a, r);
    if (a->load)
        a->via = RL_VIA_EVAL;
    a->load = 1;
    return 1;
}

static void async_reply(void *arg, redislock_err err, const rl__reply *r)
{
    async_req *a = arg;

    a->out--;
    if (err == REDISLOCK_OK && again(a, r)) {
        /* Sent again, guards too, at the back of the connection's queue;
         * the first round's guards answer before it. Whatever came just
         * before the first send (CLIENT CACHING yes) does not reach this
         * one: the caller is told, as of a redirection. */
        a->skip += (a->q.wait_replicas > 0) + rl__request_waitaof(&a->q);
        if (a->q.resent != NULL)
            *a->q.resent = 1;
        if ((err = async_send(a)) == REDISLOCK_OK)
            return;
        r = NULL;
    }
    a->err = err;
    if (err != REDISLOCK_OK)
        keep_err(a, err, redislock_errdetail());
    else if (a->out > 0 && (a->reply = rl__reply_dup(r)) == NULL)
        keep_err(a, REDISLOCK_ENOMEM, "out of memory keeping a reply");
    if (a->out == 0) {
        /* No guard: the reply goes out as it is. */
        a->cb(a->arg, err, r);
        req_free(a);
    }
}

/* The answer to what goes before the script (q's first command, a PING;
 * SCRIPT LOAD): nothing to keep. */
static void async_first(void *arg, redislock_err err, const rl__reply *r)
{
    async_req *a = arg;

    (void)err;
    (void)r;
    a->out--;
    async_end(a);
}

/* INFO replication's answer, taken before the write: how many replicas
 * the master needs (rl__seen_need; -1 when it is not a master). */
static void async_info(void *arg, redislock_err err, const rl__reply *r)
{
    async_req *a = arg;

    a->out--;
    if (a->q.need != NULL)
        *a->q.need = err == REDISLOCK_OK && r->type == REDIS_REPLY_STRING
                         ? rl__seen_need(a->q.all, r->str, rl__now_ms())
                         : -1;
    async_end(a);
}

/* A WAIT's or WAITAOF's answer: each round sent has its WAIT first, then
 * its WAITAOF, and the rounds answer in order. */
static void async_guard(void *arg, redislock_err err, const rl__reply *r)
{
    async_req *a = arg;
    int per = (a->q.wait_replicas > 0) + rl__request_waitaof(&a->q);
    int aof = rl__request_waitaof(&a->q) && a->guards++ % per == per - 1;

    a->out--;
    if (a->skip > 0)
        a->skip--;
    else if (aof && err == REDISLOCK_OK)
        take_aof(&a->q, r);
    else if (aof && a->q.aof_acked != NULL)
        a->q.aof_acked[0] = a->q.aof_acked[1] = -1;
    else if (!aof && a->q.acked != NULL)
        *a->q.acked = err == REDISLOCK_OK && r->type == REDIS_REPLY_INTEGER
                          ? r->integer
                          : -1;
    async_end(a);
}

/* What goes before the script, in its first round only (a round sent
 * again after a NOSCRIPT wrote nothing): q's first command, its reply
 * dropped, and for every replica INFO replication. */
static redislock_err send_before(async_req *a)
{
    const rl__request *q = &a->q;
    redislock_err err = REDISLOCK_OK;

    a->before_sent = 1;
    if (q->first != NULL &&
        (err = rl__aconn_send(a->c, q->first->argc, q->first->argv,
                              q->first->lens, async_first, a)) == REDISLOCK_OK)
        a->out++;
    if (err == REDISLOCK_OK && q->all != NULL &&
        (err = rl__aconn_send(a->c, 2, infov, NULL, async_info, a)) ==
            REDISLOCK_OK)
        a->out++;
    return err;
}

/* What loads a's script before it (a->load): FUNCTION LOAD of the
 * library, or SCRIPT LOAD of the script; in argv, argc returned. */
static int loadv(const async_req *a, const char *argv[3])
{
    argv[0] = a->via == RL_VIA_FCALL ? "FUNCTION" : "SCRIPT";
    argv[1] = "LOAD";
    argv[2] =
        a->via == RL_VIA_FCALL ? rl__script_library : script_of(a)->source;
    return 3;
}

/* COPY's answer behind a release (rl__request's copy_wake): whether it
 * runs on the node, for the memo. A refusal stops the node's COPYs; a
 * failure of the connection, or any other error, tells nothing. */
static void async_copy(void *arg, redislock_err err, const rl__reply *r)
{
    async_req *a = arg;

    a->out--;
    if (err == REDISLOCK_OK && a->copy != NULL) {
        if (r->type == REDIS_REPLY_INTEGER)
            __atomic_store_n(a->copy, 1, __ATOMIC_RELAXED);
        else if (r->type == REDIS_REPLY_ERROR && native_refused(r))
            __atomic_store_n(a->copy, -1, __ATOMIC_RELAXED);
    }
    async_end(a);
}

/* The place of role among s's keys, or -1. */
static int role_at(const rl__script *s, unsigned char role)
{
    int i;

    for (i = 0; s->keys != NULL && i < s->nkeys; i++)
        if (s->keys[i] == role)
            return i;
    return -1;
}

/* Whether a's script, sent now, takes COPY behind it (copy_wake), and if
 * the node has seen COPY run, its last argument "c" in argv (argc words,
 * the argument last among them). */
static int copy_behind(async_req *a, int argc, const char **argv, size_t *argl)
{
    int ran;

    if (a->copy == NULL || a->native != RL_CAP_NONE || a->lean ||
        (a->q.copy_wake == 2 && !a->tried) ||
        (ran = __atomic_load_n(a->copy, __ATOMIC_RELAXED)) < 0)
        return 0;
    if (ran > 0 && argc > 0 && argl[argc - 1] == 0) {
        argv[argc - 1] = "c";
        argl[argc - 1] = 1;
    }
    return 1;
}

/* a's native compare-and-delete, in argv and argl; returns argc. */
static int native_argv(const async_req *a, const char **argv, size_t *argl)
{
    const rl__request *q = &a->q;
    int argc = 0;

    argv[argc] = a->native == RL_CAP_DELIFEQ ? "DELIFEQ" : "DELEX";
    argl[argc] = strlen(argv[argc]);
    argc++;
    argv[argc] = q->keys[0];
    argl[argc++] = q->klens[0];
    if (a->native == RL_CAP_DELEX) {
        argv[argc] = "IFEQ";
        argl[argc++] = 4;
    }
    argv[argc] = q->args[0];
    argl[argc++] = q->lens[0];
    return argc;
}

/* Sends a's command, argc words in argv and argl (a script's call, a
 * command's words, or room for either), with what goes before and after
 * it. */
static redislock_err send_words(async_req *a, int argc, const char **argv,
                                size_t *argl)
{
    char n[2][24], ms[24];
    const char *wv[4] = {"WAIT", n[0], ms, NULL};
    const char *av[4] = {"WAITAOF", n[0], n[1], ms};
    const char *lv[3];
    const char *cv[3] = {"COPY", NULL, NULL};
    size_t cl[3] = {4, 0, 0};
    const rl__request *q = &a->q;
    int copy = 0;
    redislock_err err;

    if (q->s == NULL) {
        memcpy(argv, q->args, (size_t)argc * sizeof *argv);
        memcpy(argl, q->lens, (size_t)argc * sizeof *argl);
    } else if (a->native != RL_CAP_NONE) {
        argc = native_argv(a, argv, argl);
    }
    err = a->before_sent ? REDISLOCK_OK : send_before(a);
    if (err == REDISLOCK_OK && a->load == 1 && a->via != RL_VIA_EVAL) {
        a->load = 2;
        if ((err = rl__aconn_send(a->c, loadv(a, lv), lv, NULL, async_first,
                                  a)) == REDISLOCK_OK)
            a->out++;
    }
    if (err == REDISLOCK_OK) {
        /* The script and its COPY in one write (see below). */
        if ((copy = q->s != NULL && copy_behind(a, argc, argv, argl)))
            rl__aconn_cork(a->c);
        err = rl__aconn_send(a->c, argc, argv, argl, async_reply, a);
        if (err != REDISLOCK_OK && copy) {
            rl__aconn_uncork(a->c);
            copy = 0;
        }
    }
    if (err != REDISLOCK_OK) {
        if (a->out == 0)
            return err;
        /* What went before answers yet: the outcome goes out with it. */
        keep_err(a, err, redislock_errdetail());
        return REDISLOCK_OK;
    }
    a->out++;
    /* The COPY right behind the script, in the same write: a releaser
     * that died between two writes would leave the readers asleep. Not
     * queued (out of memory), the script's flag was sent all the same:
     * the readers then wake at their block's end, as behind a holder
     * that died. */
    if (copy) {
        cv[1] = q->keys[a->copy_from];
        cl[1] = q->klens[a->copy_from];
        cv[2] = q->keys[a->copy_to];
        cl[2] = q->klens[a->copy_to];
        if (rl__aconn_send(a->c, 3, cv, cl, async_copy, a) == REDISLOCK_OK)
            a->out++;
        rl__aconn_uncork(a->c);
    }
    if (a->q.wait_replicas > 0 || rl__request_waitaof(&a->q))
        snprintf(ms, sizeof ms, "%lld", (long long)a->q.wait_ms);
    /* The guards ride behind the script: a failure to queue them fails
     * the connection's later requests too, so the script's callback
     * reports it. */
    if (a->q.wait_replicas > 0) {
        snprintf(n[0], sizeof n[0], "%d", a->q.wait_replicas);
        if (rl__aconn_send_block(a->c, 3, wv, NULL, a->q.wait_ms, async_guard,
                                 a) == REDISLOCK_OK)
            a->out++;
    }
    if (rl__request_waitaof(&a->q)) {
        snprintf(n[0], sizeof n[0], "%d", a->q.wait_aof_local);
        snprintf(n[1], sizeof n[1], "%d", a->q.wait_aof_replicas);
        if (rl__aconn_send_block(a->c, 4, av, NULL, a->q.wait_ms, async_guard,
                                 a) == REDISLOCK_OK)
            a->out++;
    }
    return REDISLOCK_OK;
}

/* The words of a request's command: on the stack for most, on the heap
 * for a long one (a renewal by node). */
#define STACK_WORDS 80

static redislock_err async_send(async_req *a)
{
    const char *sv[STACK_WORDS], **argv = sv;
    size_t sl[STACK_WORDS], *argl = sl;
    size_t words = 4 + (size_t)a->q.nkeys + (size_t)a->q.nargs;
    char nk[8];
    const rl__request *q = &a->q;
    int argc;
    redislock_err err;

    if (words > STACK_WORDS) {
        argv = malloc(words * sizeof *argv);
        argl = malloc(words * sizeof *argl);
        if (argv == NULL || argl == NULL) {
            free(argv);
            free(argl);
            return rl__err(REDISLOCK_ENOMEM, "out of memory sending a script");
        }
    }
    if (a->lean) {
        /* Its keys: every lean_stride-th of q's (no more than fit). */
        const char *lk[STACK_WORDS];
        size_t ll[STACK_WORDS];
        int i, n = 0;

        for (i = 0; i < q->nkeys; i += q->lean_stride) {
            lk[n] = q->keys[i];
            ll[n++] = q->klens[i];
        }
        argc = rl__script_argv(q->lean, a->via, n, lk, ll, 1, q->args, q->lens,
                               nk, argv, argl);
    } else {
        argc = q->s == NULL ? q->nargs
                            : rl__script_argv(q->s, a->via, q->nkeys, q->keys,
                                              q->klens, q->nargs, q->args,
                                              q->lens, nk, argv, argl);
    }
    err = argc < 0 ? rl__err(REDISLOCK_EINVAL, "too many script arguments")
                   : send_words(a, argc, argv, argl);
    if (argv != sv) {
        free(argv);
        free(argl);
    }
    return err;
}

/* Every field of a fresh a but the request's copy. */
static void init_req(async_req *a)
{
    a->load = 0;
    a->out = a->skip = a->guards = 0;
    a->before_sent = a->all_sent = 0;
    a->err = REDISLOCK_OK;
    a->reply = NULL;
    a->detail = NULL;
}

redislock_err rl__request_send_async(rl__aconn *c, const rl__request *q,
                                     rl__aconn_cb cb, void *arg)
{
    async_req *a;
    long bytes;
    size_t n = (size_t)(q->nkeys + q->nargs), *len;
    redislock_err err;

    if (q->s == NULL &&
        (q->nkeys != 0 || q->nargs < 1 || q->nargs > RL_SCRIPT_MAX_ARGS))
        return rl__err(REDISLOCK_EINVAL,
                       "a request is one script or one command");
    if ((bytes = rl__request_bytes(q)) < 0)
        return REDISLOCK_EINVAL;
    /* Not calloc: what it copies is written before it is read. */
    if ((a = malloc(sizeof *a + n * (sizeof *a->v + sizeof(size_t)) +
                    (size_t)bytes + 1)) == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory sending a script");
    init_req(a);
    a->c = c;
    len = (size_t *)(a->v + n);
    copy_into(&a->q, a->v, len, q, (char *)(len + n));
    a->fn = rl__aconn_fn(c);
    /* A command, or a script sent whole: no NOSCRIPT, no function. */
    a->via = q->s == NULL || q->s->eval_only ? RL_VIA_EVAL
             : q->s->fname != NULL && rl__script_library[0] != '\0' &&
                     a->fn != NULL &&
                     __atomic_load_n(a->fn, __ATOMIC_RELAXED) >= 0
                 ? RL_VIA_FCALL
                 : RL_VIA_EVALSHA;
    a->caps = rl__aconn_caps(c);
    a->native = RL_CAP_NONE;
    if (q->native && q->s != NULL && q->first == NULL && q->nkeys > 0 &&
        q->nargs > 0 && a->caps != NULL) {
        int caps = __atomic_load_n(a->caps, __ATOMIC_RELAXED);
        if (caps == RL_CAP_DELIFEQ || caps == RL_CAP_DELEX)
            a->native = caps;
    }
    a->lean = a->native == RL_CAP_NONE && q->lean != NULL && q->s != NULL &&
              q->first == NULL && q->nargs > 0 && q->lean_stride > 0 &&
              q->nkeys / q->lean_stride < STACK_WORDS;
    a->copy = NULL;
    a->copy_from = a->copy_to = -1;
    a->tried = 0;
    if (q->copy_wake && q->s != NULL && q->nargs > 0 &&
        q->lens[q->nargs - 1] == 0 && q->s->nkeys == q->nkeys) {
        a->copy_from = role_at(q->s, RL_KEY_WAKE);
        a->copy_to = role_at(q->s, RL_KEY_RWAKE);
        if (a->copy_from >= 0 && a->copy_to >= 0)
            a->copy = rl__aconn_copy(c);
    }
    a->cb = cb;
    a->arg = arg;
    if ((err = async_send(a)) != REDISLOCK_OK)
        req_free(a);
    return err;
}

/* Version "a.b..." of s as a * 1000 + b (0 when it is not one). */
static long version_of(const char *s)
{
    char *end;
    long major = strtol(s, &end, 10), minor = 0;

    if (end == s || major < 0 || major > 999)
        return 0;
    if (*end == '.')
        minor = strtol(end + 1, NULL, 10);
    return major * 1000 + (minor >= 0 && minor < 1000 ? minor : 0);
}

const char *rl__hello_field(const rl__reply *r, const char *name)
{
    const rl__reply *k, *v;
    size_t i;

    if (r == NULL || (r->type != REDIS_REPLY_ARRAY
#ifdef REDIS_REPLY_MAP
                      && r->type != REDIS_REPLY_MAP
#endif
                      ))
        return NULL;
    for (i = 0; i + 1 < r->elements; i += 2) {
        k = r->element[i];
        v = r->element[i + 1];
        if (k->type == REDIS_REPLY_STRING && strcmp(k->str, name) == 0)
            return v->type == REDIS_REPLY_STRING ? v->str : NULL;
    }
    return NULL;
}

int rl__request_caps(const rl__reply *r)
{
    const char *server = rl__hello_field(r, "server");
    const char *version = rl__hello_field(r, "version");
    long ver;

    if (server == NULL || version == NULL)
        return RL_CAP_NONE;
    ver = version_of(version);
    if (strcmp(server, "valkey") == 0 && ver >= 9000)
        return RL_CAP_DELIFEQ;
    if (strcmp(server, "redis") == 0 && ver >= 8004)
        return RL_CAP_DELEX;
    return RL_CAP_NONE;
}
