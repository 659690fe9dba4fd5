#include "pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"
#include "ploop.h"
#include "request.h"

/* The constructors' checks of a server: PING, and HELLO without
 * arguments, which changes nothing and names the kind of server ("mode");
 * every user may run it, whatever its ACL. */
static const char *pingv[1] = {"PING"};
static const char *hellov[1] = {"HELLO"};

static int64_t or_default(int64_t v, int64_t dflt)
{
    return v > 0 ? v : dflt;
}

static redislock_err set_name(rl__pool *p)
{
    size_t n;

    if (p->url.path != NULL) {
        p->name = strdup(p->url.path);
    } else {
        n = strlen(p->url.host) + 16;
        if ((p->name = malloc(n)) != NULL)
            snprintf(p->name, n, "%s:%d", p->url.host, p->url.port);
    }
    return p->name ? REDISLOCK_OK : rl__err(REDISLOCK_ENOMEM, "out of memory");
}

/* own_auth: the URL's password only. */
static redislock_err pool_init(rl__pool *p, const char *url,
                               const redislock_options *o, int own_auth)
{
    const char *pw;
    redislock_err err;

    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    if ((err = rl__url_parse(url, &p->url)) != REDISLOCK_OK)
        return err;
    p->cfg.url = &p->url;
    p->cfg.fn = &p->fn;
    p->cfg.caps = &p->caps;
    p->cfg.copy = &p->copy;
    /* The options win over the URL's query, which wins over the
     * defaults. */
    p->cfg.connect_timeout_ms =
        or_default(o->connect_timeout_ms,
                   or_default(p->url.connect_timeout_ms,
                              REDISLOCK_DEFAULT_CONNECT_TIMEOUT_MS));
    p->cfg.command_timeout_ms =
        or_default(o->command_timeout_ms,
                   or_default(p->url.command_timeout_ms,
                              REDISLOCK_DEFAULT_COMMAND_TIMEOUT_MS));
    p->max = o->max_connections > 0 ? o->max_connections
                                    : REDISLOCK_DEFAULT_MAX_CONNECTIONS;
    p->aof_local = o->wait_aof_local;
    p->aof_replicas = o->wait_aof_replicas;
    pw = own_auth          ? p->url.password
         : o->password     ? o->password
         : p->url.password ? p->url.password
                           : getenv("REDISCLI_AUTH");
    if (pw != NULL && (p->password = strdup(pw)) == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    p->cfg.password = p->password;
    if ((err = rl__conn_tls_new(&p->url, o, &p->cfg.tls)) != REDISLOCK_OK)
        return err;
    p->idle = calloc((size_t)p->max, sizeof *p->idle);
    if (p->idle == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    return set_name(p);
}

redislock_err rl__pool_init(rl__pool *p, const char *url,
                            const redislock_options *o)
{
    return pool_init(p, url, o, 0);
}

redislock_err rl__pool_init_own_auth(rl__pool *p, const char *url,
                                     const redislock_options *o)
{
    return pool_init(p, url, o, 1);
}

void rl__pool_fini(rl__pool *p)
{
    int i;

    for (i = 0; i < p->nidle; i++)
        rl__aconn_close(p->idle[i]);
    free(p->idle);
    rl__conn_tls_free(p->cfg.tls);
    free(p->name);
    rl__url_free(&p->url);
    if (p->password != NULL) {
        memset(p->password, 0, strlen(p->password));
        free(p->password);
    }
    pthread_mutex_destroy(&p->mu);
    memset(p, 0, sizeof *p);
}

/* The value of field ("aof_enabled:") in an INFO reply r, or NULL. */
static const char *info_field(const rl__reply *r, const char *field)
{
    const char *at;

    if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS &&
        r->type != 14 /* RESP3 verbatim */)
        return NULL;
    at = strstr(r->str, field);
    return at != NULL ? at + strlen(field) : NULL;
}

/* The questions of the WAITAOF guard's check (see aof_verdict). */
static int aof_questions(const rl__pool *p, rl__cmd *cmds)
{
    static const char *cmdv[3] = {"COMMAND", "INFO", "WAITAOF"};
    static const char *infov[2] = {"INFO", "persistence"};
    static const char *cfgv[3] = {"CONFIG", "GET", "appendfsync"};

    cmds[0] = (rl__cmd){3, cmdv, NULL};
    cmds[1] = (rl__cmd){2, infov, NULL};
    cmds[2] = (rl__cmd){3, cfgv, NULL};
    return p->aof_local ? 3 : 1;
}

/* Whether the server can confirm what the WAITAOF guard asks, by the
 * replies to aof_questions: it has the command (COMMAND INFO answers nil
 * for an unknown one), and for the master's own fsync, AOF on with a
 * policy under which WAITAOF's count means an fsync (appendfsync always
 * or everysec: with "no" the kernel flushes when it likes, and WAITAOF
 * cannot know). Asked once per server, at construction; no guessing
 * from versions. */
static redislock_err aof_verdict(const rl__pool *p, int n, rl__reply *const *r)
{
    const char *v;

    if (r[0]->type == REDIS_REPLY_ERROR)
        return rl__err(REDISLOCK_ECONFIG,
                       "%s: cannot ask whether it has WAITAOF (COMMAND INFO: "
                       "%.80s): allow the user COMMAND, or turn the "
                       "wait_aof_* options off",
                       p->name, r[0]->str);
    if (r[0]->type != REDIS_REPLY_ARRAY || r[0]->elements != 1 ||
        r[0]->element[0]->type != REDIS_REPLY_ARRAY)
        return rl__err(REDISLOCK_ECONFIG,
                       "%s has no WAITAOF (Redis and Valkey have it from "
                       "7.2): turn wait_aof_local and wait_aof_replicas off, "
                       "or use wait_replicas",
                       p->name);
    if (n == 3 && ((v = info_field(r[1], "aof_enabled:")) == NULL || *v != '1'))
        return rl__err(REDISLOCK_ECONFIG,
                       "%s has AOF off (appendonly no): WAITAOF cannot "
                       "confirm a local fsync; turn appendonly on, or "
                       "wait_aof_local off",
                       p->name);
    if (n == 3 && r[2]->type == REDIS_REPLY_ERROR)
        return rl__err(REDISLOCK_ECONFIG,
                       "%s: cannot read appendfsync (%.80s), which decides "
                       "whether WAITAOF's local count is an fsync: allow the "
                       "user CONFIG GET, or turn wait_aof_local off",
                       p->name, r[2]->str);
    if (n == 3 && (r[2]->type != REDIS_REPLY_ARRAY || r[2]->elements != 2 ||
                   r[2]->element[1]->type != REDIS_REPLY_STRING ||
                   strcmp(r[2]->element[1]->str, "no") == 0))
        return rl__err(REDISLOCK_ECONFIG,
                       "%s has appendfsync no: the kernel, not Redis, decides "
                       "when the AOF reaches the disk, so WAITAOF's local "
                       "count means nothing; set appendfsync everysec or "
                       "always, or turn wait_aof_local off",
                       p->name);
    return REDISLOCK_OK;
}

rl__aconn *rl__pool_take(rl__pool *p)
{
    rl__aconn *c = NULL;

    pthread_mutex_lock(&p->mu);
    while (c == NULL && p->nidle > 0) {
        c = p->idle[--p->nidle];
        /* Bytes nobody asked for, or the server's close, arrived while it
         * lay idle: a fresh connection rather than a false reply. */
        if (rl__aconn_stale(c)) {
            rl__aconn_close(c);
            c = NULL;
        }
    }
    pthread_mutex_unlock(&p->mu);
    return c;
}

/* Keeps c, taken off its loop, idle for the next asker or private loop;
 * closes it when it is of no more use or the pool is full. */
static void put(rl__pool *p, rl__aconn *c)
{
    pthread_mutex_lock(&p->mu);
    if (p->nidle < p->max && !rl__aconn_stale(c)) {
        p->idle[p->nidle++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&p->mu);
    rl__aconn_close(c);
}

/* One ask on the private loop: its connection, the replies that came
 * (the WAITAOF guard's questions first, on a new connection), and how
 * many are still awaited. */
typedef struct asking {
    rl__pool_ask *a;
    rl__aconn *conn;
    int naof; /* the guard's questions sent before a's */
    rl__reply *r[3 + RL_ASK_MAX];
    int got, want;
    int *left; /* asks not yet answered */
} asking;

/* The ask's failure, the first one given. */
static void ask_failed(rl__pool_ask *a, redislock_err err, const char *detail)
{
    if (a->err != REDISLOCK_OK)
        return;
    a->err = err;
    snprintf(a->detail, sizeof a->detail, "%s", detail);
}

/* One reply, or why there is none, in the order they were asked for. */
static void asked(void *arg, redislock_err err, const rl__reply *r)
{
    asking *k = arg;

    if (err != REDISLOCK_OK)
        ask_failed(k->a, err, redislock_errdetail());
    else if ((k->r[k->got] = rl__reply_dup(r)) == NULL)
        ask_failed(k->a, REDISLOCK_ENOMEM, "out of memory");
    if (++k->got == k->want)
        --*k->left;
}

/* Sends k's questions, on an idle connection of its pool or a new one,
 * the WAITAOF guard's check first on a new one. */
static void ask_send(rl__loop *lp, asking *k)
{
    rl__pool *p = k->a->pool;
    rl__cmd cmds[3 + RL_ASK_MAX];
    redislock_err err = REDISLOCK_OK;
    int i;

    if ((k->conn = rl__pool_take(p)) != NULL) {
        err = rl__loop_adopt(lp, k->conn);
    } else {
        err = rl__loop_connect(lp, &p->cfg, &k->conn);
        if (err == REDISLOCK_OK && (p->aof_local || p->aof_replicas))
            k->naof = aof_questions(p, cmds);
    }
    if (err != REDISLOCK_OK) {
        k->conn = NULL;
        ask_failed(k->a, err, redislock_errdetail());
        return;
    }
    for (i = 0; i < k->a->n; i++)
        cmds[k->naof + i] = k->a->cmds[i];
    for (i = 0; i < k->naof + k->a->n && err == REDISLOCK_OK; i++)
        err = rl__aconn_send(k->conn, cmds[i].argc, cmds[i].argv, cmds[i].lens,
                             asked, k);
    k->want = i - (err != REDISLOCK_OK);
    if (err != REDISLOCK_OK)
        ask_failed(k->a, err, redislock_errdetail());
    if (k->want > 0)
        ++*k->left;
}

/* k's outcome: the guard's verdict, then the replies to a's questions
 * (the caller's to free); its connection back to the pool when it is
 * still good and waits for nothing (one with a reply still to come, cut
 * short or left by a failed loop, is closed with the loop). */
static void ask_end(rl__loop *lp, asking *k, int64_t waited_ms)
{
    rl__pool_ask *a = k->a;
    redislock_err err;
    int i;

    if (k->got < k->want && a->err == REDISLOCK_OK) {
        char d[128];

        snprintf(d, sizeof d,
                 "no answer in the %lld ms given once enough servers had "
                 "answered",
                 (long long)waited_ms);
        a->cut = 1;
        ask_failed(a, REDISLOCK_ETIMEDOUT, d);
    }
    if (a->err == REDISLOCK_OK && k->naof > 0 &&
        (err = aof_verdict(a->pool, k->naof, k->r)) != REDISLOCK_OK)
        ask_failed(a, err, redislock_errdetail());
    /* Replies that came before a failure are kept too: a PING's refusal
     * says more than the loss of the connection after it. */
    for (i = 0; i < k->got; i++) {
        if (i >= k->naof)
            a->r[i - k->naof] = k->r[i];
        else
            rl__reply_free(k->r[i]);
    }
    if (k->conn == NULL || k->got < k->want)
        return;
    if (!rl__aconn_broken(k->conn)) {
        rl__loop_detach(lp, k->conn);
        put(a->pool, k->conn);
    }
}

/* Every ask not yet answered fails with err, its detail set. */
static void asks_failed(rl__pool_ask *asks, size_t n, redislock_err err)
{
    char said[RL_POOL_DETAIL];
    size_t i;

    snprintf(said, sizeof said, "%s", redislock_errdetail());
    for (i = 0; i < n; i++)
        ask_failed(&asks[i], err, said);
}

/* The private loop's timer at the end of the quick wait: its firing
 * ends the round, so that the asks' loop looks again. */
static void quick_over(rl__loop_timer *t)
{
    (void)t;
}

/* How many asks have all their replies and no failure. */
static size_t answered(const asking *k, size_t n)
{
    size_t i, good = 0;

    for (i = 0; i < n; i++)
        good += k[i].got == k[i].want && k[i].a->err == REDISLOCK_OK;
    return good;
}

void rl__pools_ask(rl__pool_ask *asks, size_t n, size_t enough,
                   int64_t quick_ms)
{
    rl__ploop *pl = NULL;
    rl__loop *lp = NULL;
    rl__loop_ops ops;
    rl__loop_timer quick = {.fire = quick_over};
    asking *k;
    redislock_err err;
    int left = 0;
    int64_t t0 = rl__now_us(), until = t0 + quick_ms * 1000;
    size_t i;

    for (i = 0; i < n; i++) {
        asks[i].err = REDISLOCK_OK;
        asks[i].cut = 0;
        asks[i].detail[0] = '\0';
        memset(asks[i].r, 0, sizeof asks[i].r);
    }
    if ((k = calloc(n ? n : 1, sizeof *k)) == NULL) {
        asks_failed(asks, n, rl__err(REDISLOCK_ENOMEM, "out of memory"));
        return;
    }
    if ((err = rl__ploop_new(&pl, &ops)) != REDISLOCK_OK ||
        (err = rl__loop_new(&ops, &lp)) != REDISLOCK_OK) {
        asks_failed(asks, n, err);
    } else {
        rl__ploop_drive(pl, lp);
        for (i = 0; i < n; i++) {
            k[i].a = &asks[i];
            k[i].left = &left;
            ask_send(lp, &k[i]);
        }
        if (enough > 0 && left > 0)
            err = rl__loop_arm(lp, &quick, until);
        /* Every request has its deadline: this ends. */
        while (left > 0 && err == REDISLOCK_OK &&
               (enough == 0 || answered(k, n) < enough || rl__now_us() < until))
            err = rl__ploop_round(pl, NULL, NULL);
        if (err != REDISLOCK_OK)
            asks_failed(asks, n, err);
        rl__loop_disarm(lp, &quick);
        for (i = 0; i < n; i++)
            ask_end(lp, &k[i], (rl__now_us() - t0) / 1000);
    }
    rl__loop_free(lp);
    rl__ploop_free(pl);
    free(k);
}

redislock_err rl__pool_command(rl__pool *p, int argc, const char **argv,
                               rl__reply **out)
{
    rl__pool_ask a = {.pool = p, .n = 1, .cmds = {{argc, argv, NULL}}};

    *out = NULL;
    rl__pools_ask(&a, 1, 0, 0);
    if (a.err != REDISLOCK_OK) {
        rl__pool_ask_free(&a);
        return rl__err(a.err, "%s", a.detail);
    }
    *out = a.r[0];
    return REDISLOCK_OK;
}

/*
 * Whether r, the reply to a HELLO without arguments, says the server is a
 * Redis Sentinel ("mode" "sentinel"; a map under RESP3, pairs in an array
 * under RESP2). An error (a server before 6.2, HELLO renamed) says
 * nothing: such a server is judged by what it does later, as before.
 */
static int says_sentinel(const rl__reply *r)
{
    const char *mode = rl__hello_field(r, "mode");

    return mode != NULL && strcmp(mode, "sentinel") == 0;
}

/* What p's server offers for a release (rl__conn_cfg.caps), from its
 * HELLO's reply h (NULL: none came). A refusal seen since stands. */
static void note_caps(rl__pool *p, const rl__reply *h)
{
    int was = 0;

    __atomic_compare_exchange_n(&p->caps, &was, rl__request_caps(h), 0,
                                __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* The verdict on a PING's reply r and a HELLO's h (NULL when it did
 * not come) from p: REDISLOCK_OK for a PONG from a Redis server. */
static redislock_err ping_verdict(const rl__pool *p, const rl__reply *r,
                                  const rl__reply *h)
{
    redislock_err err;

    if ((err = rl__reply_check(r, "PING")) != REDISLOCK_OK)
        return err;
    if (r->type != REDIS_REPLY_STATUS || strcmp(r->str, "PONG") != 0)
        return rl__err(REDISLOCK_EPROTOCOL,
                       "PING answered something other than PONG: is this "
                       "a Redis server?");
    /* A sentinel answers PING too, but has no scripts: without this, the
     * first lock would fail with "unknown command 'EVALSHA'" as if the
     * server's configuration had renamed it. */
    if (says_sentinel(h))
        return rl__err(REDISLOCK_ECONNECT,
                       "%s is a Redis Sentinel, not a Redis server: to lock "
                       "on the master it watches, use "
                       "redis+sentinel://%s/NAME with the master's name "
                       "(SENTINEL MASTERS lists them)",
                       p->name, p->name);
    /* The server answered PING as Redis does. A failure after that is
     * HELLO's alone (a proxy that closes the connection on a command it
     * does not know, a server that never answers it): before HELLO was
     * asked such a server was taken, and it still is; the connection
     * lost with it is opened again when needed. */
    return REDISLOCK_OK;
}

redislock_err rl__pool_pinged(const rl__pool_ask *a)
{
    redislock_err err;

    if (a->r[0] == NULL)
        return rl__err(a->err, "%s", a->detail);
    if ((err = ping_verdict(a->pool, a->r[0], a->r[1])) != REDISLOCK_OK)
        return err;
    note_caps(a->pool, a->r[1]);
    /* Both replies came, and still it failed: the WAITAOF guard's check
     * of a new connection, asked first, refused the server. */
    if (a->err != REDISLOCK_OK && a->r[1] != NULL)
        return rl__err(a->err, "%s", a->detail);
    return REDISLOCK_OK;
}

/*
 * A lazy node's admission (pool.h): the client's own questions (ident.h)
 * first, then, until a connection has passed them, the constructor's
 * checks: PING, HELLO and the WAITAOF guard's questions. mark is where
 * the checks begin. The verdict on both parts, the client's first;
 * once the checks pass, later connections skip them, as they skip the
 * constructor's on an eager client.
 */
static redislock_err gate_ask(void *arg, rl__admit_ask *a)
{
    rl__pool *p = arg;
    redislock_err err;
    rl__cmd aof[3];
    int checked, i, naof;

    a->n = 0;
    if (p->admit.ask != NULL && (err = p->admit.ask(p->admit.arg, a)) != 0)
        return err;
    a->mark = a->n;
    pthread_mutex_lock(&p->mu);
    checked = p->checked;
    pthread_mutex_unlock(&p->mu);
    if (checked)
        return REDISLOCK_OK;
    a->cmds[a->n++] = (rl__cmd){1, pingv, NULL};
    a->cmds[a->n++] = (rl__cmd){1, hellov, NULL};
    naof = p->aof_local || p->aof_replicas ? aof_questions(p, aof) : 0;
    for (i = 0; i < naof; i++)
        a->cmds[a->n++] = aof[i];
    return REDISLOCK_OK;
}

static redislock_err gate_judge(void *arg, const rl__admit_ask *a,
                                rl__reply *const *r)
{
    rl__pool *p = arg;
    rl__admit_ask own = *a;
    redislock_err err;

    own.n = a->mark;
    if (p->admit.judge != NULL && a->mark > 0 &&
        (err = p->admit.judge(p->admit.arg, &own, r)) != REDISLOCK_OK)
        return err;
    if (a->n == a->mark)
        return REDISLOCK_OK;
    if ((err = ping_verdict(p, r[a->mark], r[a->mark + 1])) != REDISLOCK_OK ||
        (a->n > a->mark + 2 &&
         (err = aof_verdict(p, a->n - a->mark - 2, r + a->mark + 2)) !=
             REDISLOCK_OK))
        return err;
    note_caps(p, r[a->mark + 1]);
    pthread_mutex_lock(&p->mu);
    p->checked = 1;
    pthread_mutex_unlock(&p->mu);
    return REDISLOCK_OK;
}

/* A probed node's admission (rl__pool_probe): HELLO until one
 * connection has had its answer. */
static redislock_err probe_ask(void *arg, rl__admit_ask *a)
{
    rl__pool *p = arg;

    pthread_mutex_lock(&p->mu);
    a->n = p->checked ? 0 : 1;
    pthread_mutex_unlock(&p->mu);
    a->mark = 0;
    a->cmds[0] = (rl__cmd){1, hellov, NULL};
    return REDISLOCK_OK;
}

/* Whatever HELLO answered (an error from a server without it: no native
 * commands) admits the connection. */
static redislock_err probe_judge(void *arg, const rl__admit_ask *a,
                                 rl__reply *const *r)
{
    rl__pool *p = arg;

    if (a->n == 0)
        return REDISLOCK_OK;
    note_caps(p, r[0]);
    pthread_mutex_lock(&p->mu);
    p->checked = 1;
    pthread_mutex_unlock(&p->mu);
    return REDISLOCK_OK;
}

void rl__pool_probe(rl__pool *p)
{
    p->gate = (rl__admit){probe_ask, probe_judge, p};
    p->cfg.admit = &p->gate;
}

void rl__pool_lazy(rl__pool *p)
{
    p->lazy = 1;
    p->gate = (rl__admit){gate_ask, gate_judge, p};
    p->cfg.admit = &p->gate;
}

void rl__pool_admit_by(rl__pool *p, const rl__admit *admit)
{
    p->admit = *admit;
    p->cfg.admit = p->lazy ? &p->gate : &p->admit;
}

void rl__pool_ping(rl__pool_ask *a, rl__pool *p)
{
    memset(a, 0, sizeof *a);
    a->pool = p;
    a->n = 2;
    a->cmds[0] = (rl__cmd){1, pingv, NULL};
    a->cmds[1] = (rl__cmd){1, hellov, NULL};
}

void rl__pool_ask_free(rl__pool_ask *a)
{
    int i;

    for (i = 0; i < RL_ASK_MAX; i++) {
        rl__reply_free(a->r[i]);
        a->r[i] = NULL;
    }
}

redislock_err rl__pools_check(rl__pool *pools, size_t n)
{
    rl__pool_ask *a = calloc(n ? n : 1, sizeof *a);
    redislock_err err = REDISLOCK_OK;
    size_t i;

    if (a == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    for (i = 0; i < n; i++)
        rl__pool_ping(&a[i], &pools[i]);
    rl__pools_ask(a, n, 0, 0);
    for (i = 0; i < n && err == REDISLOCK_OK; i++)
        err = rl__pool_pinged(&a[i]);
    for (i = 0; i < n; i++)
        rl__pool_ask_free(&a[i]);
    free(a);
    return err;
}
