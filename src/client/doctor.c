/*
 * The doctor (doctor.h): every node of a client asked at once, on a
 * private loop (rl__pools_ask), for INFO, CONFIG GET appendfsync, an EVAL,
 * TIME and, in a cluster, CLUSTER INFO; a Sentinel client's sentinels for
 * SENTINEL CKQUORUM. Each answer is judged alone, against the client's
 * guards; nothing is written on a server.
 */
#include "doctor.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "env.h"
#include "error.h"
#include "sentinel.h"

/* The longest clock check redislock_doctor takes. */
#define RL_DOCTOR_CLOCK_MAX_MS 60000

/* The questions to a data node, in this order (CLUSTER INFO only in a
 * cluster). */
enum { Q_INFO, Q_FSYNC, Q_EVAL, Q_TIME, Q_CLUSTER, Q_N };

/* What a doctor's run collects. */
typedef struct doctor {
    const rl__env *env;
    redislock_finding *out;
    size_t cap, n;
    int slots_told; /* a cluster's slots are every master's: told once */
    /* The first server that answered but refused INFO, whose settings
     * could not be judged (strict refuses it), or NULL. */
    const rl__pool *unread;
} doctor;

/* One node asked: a data node, or a sentinel (ask.n == 1). */
typedef struct node {
    rl__pool_ask ask;
    int sentinel;
    int64_t time_us; /* its TIME, or -1 */
} node;

static const char *const risk_names[] = {
    "unknown",       "eviction", "no-persistence", "fsync",
    "replica",       "replicas", "no-scripts",     "sentinel-quorum",
    "cluster-slots", "clock",    "unanswered",
};

const char *redislock_risk_name(redislock_risk risk)
{
    if ((int)risk < 1 || (size_t)risk >= sizeof risk_names / sizeof *risk_names)
        return risk_names[0];
    return risk_names[risk];
}

#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
static void
add(doctor *d, redislock_risk risk, const rl__pool *p, const char *fix,
    const char *fmt, ...)
{
    redislock_finding *f;
    va_list ap;

    if (d->n++ >= d->cap)
        return;
    f = &d->out[d->n - 1];
    memset(f, 0, sizeof *f);
    f->risk = risk;
    snprintf(f->server, sizeof f->server, "%s", p->name);
    va_start(ap, fmt);
    vsnprintf(f->what, sizeof f->what, fmt, ap);
    va_end(ap);
    snprintf(f->fix, sizeof f->fix, "%s", fix);
}

/* The value of field name of an INFO-style reply r ("name:value" lines),
 * copied into buf; whether it is there. */
static int field(const rl__reply *r, const char *name, char *buf, size_t len)
{
    size_t n = strlen(name);
    const char *at, *end;

    if (r == NULL || (r->type != REDIS_REPLY_STRING &&
                      r->type != REDIS_REPLY_STATUS && r->type != 14))
        return 0;
    for (at = r->str; (at = strstr(at, name)) != NULL; at += n) {
        if ((at == r->str || at[-1] == '\n') && at[n] == ':')
            break;
    }
    if (at == NULL)
        return 0;
    at += n + 1;
    end = at + strcspn(at, "\r\n");
    snprintf(buf, len, "%.*s", (int)(end - at), at);
    return 1;
}

static long long field_ll(const rl__reply *r, const char *name, long long dflt)
{
    char v[64];

    return field(r, name, v, sizeof v) ? strtoll(v, NULL, 10) : dflt;
}

static int is_error(const rl__reply *r)
{
    return r != NULL && r->type == REDIS_REPLY_ERROR;
}

/* TIME's reply in microseconds, or -1. */
static int64_t time_us(const rl__reply *r)
{
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING)
        return -1;
    return strtoll(r->element[0]->str, NULL, 10) * 1000000 +
           strtoll(r->element[1]->str, NULL, 10);
}

/* The replica-sync guard's rows: a replica, or a master whose replicas a
 * failover could promote without the lock. */
static void judge_role(doctor *d, const rl__pool *p, const rl__reply *info)
{
    int want = d->env->replicas.want;
    char role[32];
    long long n;

    if (!field(info, "role", role, sizeof role))
        return;
    if (strcmp(role, "master") != 0) {
        add(d, REDISLOCK_RISK_REPLICA, p,
            "give the master's address, or a redis+sentinel:// URL that "
            "follows the master",
            "the server is a replica (role:%s): a lock written here is "
            "refused (READONLY), or with replica-read-only no lost at the "
            "next sync with its master",
            role);
        return;
    }
    n = field_ll(info, "connected_slaves", 0);
    if (n > 0 && want == 0)
        add(d, REDISLOCK_RISK_REPLICAS, p,
            "wait for every replica: wait_replicas = REDISLOCK_REPLICAS_ALL "
            "(CLI --wait-replicas all)",
            "%lld replica(s) and no replica guard: a failover can promote a "
            "replica that never got a lock's write, and a second client "
            "takes the lock",
            n);
    else if (n > 0 && want > 0 && want < n)
        add(d, REDISLOCK_RISK_REPLICAS, p,
            "wait for every replica: wait_replicas = REDISLOCK_REPLICAS_ALL "
            "(CLI --wait-replicas all)",
            "%lld replicas and the guard waits for %d: a failover can promote "
            "one of the others, which may not have a lock's write",
            n, want);
}

/* maxmemory-policy: only noeviction keeps every key. */
static void judge_eviction(doctor *d, const rl__pool *p, const rl__reply *info)
{
    char policy[64], mem[64];

    if (!field(info, "maxmemory_policy", policy, sizeof policy) ||
        strcmp(policy, "noeviction") == 0)
        return;
    if (!field(info, "maxmemory_human", mem, sizeof mem))
        snprintf(mem, sizeof mem, "?");
    add(d, REDISLOCK_RISK_EVICTION, p,
        "CONFIG SET maxmemory-policy noeviction (and in its configuration "
        "file), or keep the locks on a server of their own that has it",
        "maxmemory-policy is %s (maxmemory %s%s): when memory is full the "
        "server deletes keys, and every lock's key has a TTL, so a held "
        "lock can vanish and be taken by another client",
        policy, mem,
        strcmp(mem, "0B") == 0 ? ", none yet: from when one is set" : "");
}

/* The append-only file and its fsync policy. */
static void judge_persistence(doctor *d, const rl__pool *p,
                              const rl__reply *info, const rl__reply *cfg)
{
    const rl__replicas *g = &d->env->replicas;
    const char *fsync;

    if (field_ll(info, "aof_enabled", -1) == 0) {
        add(d, REDISLOCK_RISK_NO_PERSISTENCE, p,
            "appendonly yes with appendfsync always; or, without "
            "persistence, keep a crashed server down for the longest TTL "
            "before it serves again (a delayed restart)",
            "the append-only file is off: a restart (a crash, an OOM kill, "
            "an upgrade) comes back without the locks held, and grants "
            "them again while their holders still work");
        return;
    }
    /* CONFIG refused (an ACL, a managed service): not judged. */
    if (cfg == NULL || cfg->type != REDIS_REPLY_ARRAY || cfg->elements != 2 ||
        cfg->element[1]->type != REDIS_REPLY_STRING)
        return;
    fsync = cfg->element[1]->str;
    if (strcmp(fsync, "always") == 0 || g->aof_local)
        return;
    add(d, REDISLOCK_RISK_FSYNC, p,
        "appendfsync always, or have each lock write confirmed on disk: "
        "wait_aof_local = 1 (CLI --wait-aof-local)",
        "appendfsync is %s: a crash of the machine loses the lock writes "
        "not yet on disk (%s), and those locks are granted again",
        fsync,
        strcmp(fsync, "no") == 0 ? "up to about 30 s of them"
                                 : "up to a second of them");
}

/* A cluster whose slots are not all served. */
static void judge_slots(doctor *d, const rl__pool *p, const rl__reply *ci)
{
    char state[32];
    long long assigned;

    if (ci == NULL || is_error(ci) || d->slots_told)
        return;
    assigned = field_ll(ci, "cluster_slots_assigned", 16384);
    if (!field(ci, "cluster_state", state, sizeof state))
        return;
    if (strcmp(state, "ok") == 0 && assigned >= 16384)
        return;
    d->slots_told = 1;
    add(d, REDISLOCK_RISK_CLUSTER_SLOTS, p,
        "assign every slot to a master (redis-cli --cluster fix), and "
        "keep a replica per master so that a failover covers its slots",
        "cluster_state is %s, %lld of 16384 slots assigned: the locks of "
        "the slots no master serves cannot be taken or released",
        state, assigned);
}

static void judge_node(doctor *d, node *nd)
{
    rl__pool_ask *a = &nd->ask;
    const rl__pool *p = a->pool;

    if (a->err != REDISLOCK_OK) {
        add(d, REDISLOCK_RISK_UNANSWERED, p,
            "check its address, password and that it runs; nothing else of "
            "it was checked",
            "no answer: %s: %s", redislock_errname(a->err), a->detail);
        return;
    }
    if (nd->sentinel) {
        if (is_error(a->r[0]))
            add(d, REDISLOCK_RISK_SENTINEL_QUORUM, p,
                "run at least three sentinels on separate machines, with a "
                "quorum a majority of them can reach",
                "SENTINEL CKQUORUM: %.200s: a failover of the master could "
                "not be agreed on, and requests would wait for a master no "
                "one promotes",
                a->r[0]->str);
        return;
    }
    if (is_error(a->r[Q_INFO])) {
        if (d->unread == NULL)
            d->unread = p;
        add(d, REDISLOCK_RISK_UNANSWERED, p,
            "allow the user INFO (+info), or check the server by hand",
            "INFO refused (%.200s): its configuration could not be read",
            a->r[Q_INFO]->str);
    } else {
        judge_role(d, p, a->r[Q_INFO]);
        judge_eviction(d, p, a->r[Q_INFO]);
        judge_persistence(d, p, a->r[Q_INFO], a->r[Q_FSYNC]);
    }
    if (is_error(a->r[Q_EVAL]))
        add(d, REDISLOCK_RISK_NO_SCRIPTS, p,
            "allow the user EVAL, EVALSHA, SCRIPT and FCALL (+@scripting), "
            "on a server built with Lua",
            "EVAL refused (%.200s): every acquire runs a script (its "
            "fencing token is counted by one), so none can succeed",
            a->r[Q_EVAL]->str);
    if (a->n > Q_CLUSTER)
        judge_slots(d, p, a->r[Q_CLUSTER]);
    nd->time_us = time_us(a->r[Q_TIME]);
}

/* Appends a node of pool p to *v, growing it. */
static node *push(node **v, size_t *n, size_t *cap, rl__pool *p)
{
    node *w;

    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 8;

        if ((w = realloc(*v, c * sizeof *w)) == NULL)
            return NULL;
        *v = w;
        *cap = c;
    }
    w = &(*v)[(*n)++];
    memset(w, 0, sizeof *w);
    w->ask.pool = p;
    w->time_us = -1;
    return w;
}

/* Every node of the client with its questions: the data nodes, then a
 * Sentinel client's sentinels (whose words, the master's name included,
 * live in ck). NULL when out of memory. */
static node *nodes_of(rl__env *e, const char *ck[3], size_t *count)
{
    static const char *info[1] = {"INFO"};
    static const char *fsync[3] = {"CONFIG", "GET", "appendfsync"};
    static const char *eval[3] = {"EVAL", "return 1", "0"};
    static const char *tm[1] = {"TIME"};
    static const char *cinfo[2] = {"CLUSTER", "INFO"};
    rl__topo *t = &e->topo;
    size_t n = 0, cap = 0, i;
    node *v = NULL, *nd;
    rl__pool *p;
    const char *q[3];

    for (i = 0; (p = rl__topo_each(t, i)) != NULL; i++) {
        if ((nd = push(&v, &n, &cap, p)) == NULL)
            goto oom;
        nd->ask.cmds[Q_INFO] = (rl__cmd){1, info, NULL};
        nd->ask.cmds[Q_FSYNC] = (rl__cmd){3, fsync, NULL};
        nd->ask.cmds[Q_EVAL] = (rl__cmd){3, eval, NULL};
        nd->ask.cmds[Q_TIME] = (rl__cmd){1, tm, NULL};
        nd->ask.cmds[Q_CLUSTER] = (rl__cmd){2, cinfo, NULL};
        nd->ask.n = t->kind == RL_TOPO_CLUSTER ? Q_N : Q_CLUSTER;
    }
    for (i = 0; t->kind == RL_TOPO_SENTINEL &&
                (p = rl__sentinel_asked(t->sentinel, i, q)) != NULL;
         i++) {
        if ((nd = push(&v, &n, &cap, p)) == NULL)
            goto oom;
        ck[0] = "SENTINEL";
        ck[1] = "CKQUORUM";
        ck[2] = q[2];
        nd->sentinel = 1;
        nd->ask.cmds[0] = (rl__cmd){3, ck, NULL};
        nd->ask.n = 1;
    }
    *count = n;
    if (v == NULL && (v = calloc(1, sizeof *v)) == NULL)
        goto oom;
    return v;
oom:
    free(v);
    return NULL;
}

/* Sleeps until the monotonic clock reads at least until_us. */
static void sleep_until(int64_t until_us)
{
    int64_t left;

    while ((left = until_us - rl__now_us()) > 0) {
        struct timespec ts = {(time_t)(left / 1000000),
                              (long)(left % 1000000) * 1000};

        if (nanosleep(&ts, NULL) != 0 && errno != EINTR)
            return;
    }
}

/* The clock check: each data node that told its time is asked again
 * clock_ms after the first asking began (a1; its answers had come by
 * b1). A server's clock that runs at this machine's rate advances between
 * a2 - b1 and b2 - a1: more than 1 % of the interval (and 1 ms) outside
 * those bounds is a finding. */
static void judge_clocks(doctor *d, node *v, size_t n, int64_t clock_ms,
                         int64_t a1, int64_t b1)
{
    static const char *tm[1] = {"TIME"};
    rl__pool_ask *asks = calloc(n ? n : 1, sizeof *asks);
    size_t *of = calloc(n ? n : 1, sizeof *of), k = 0, i;
    int64_t a2, b2, slack = clock_ms * 10 + 1000;

    if (asks == NULL || of == NULL) {
        free(asks);
        free(of);
        return;
    }
    for (i = 0; i < n; i++)
        if (!v[i].sentinel && v[i].time_us >= 0) {
            asks[k] = (rl__pool_ask){.pool = v[i].ask.pool, .n = 1};
            asks[k].cmds[0] = (rl__cmd){1, tm, NULL};
            of[k++] = i;
        }
    sleep_until(a1 + clock_ms * 1000);
    a2 = rl__now_us();
    if (k > 0)
        rl__pools_ask(asks, k, 0, 0);
    b2 = rl__now_us();
    for (i = 0; i < k; i++) {
        int64_t s2 = asks[i].err == REDISLOCK_OK ? time_us(asks[i].r[0]) : -1;
        int64_t ds = s2 - v[of[i]].time_us, lo = a2 - b1, hi = b2 - a1;

        if (s2 >= 0 && (ds < lo - slack || ds > hi + slack))
            add(d, REDISLOCK_RISK_CLOCK, asks[i].pool,
                "keep its clock in step without jumps (chrony or ntpd, "
                "slewing), and check the machine's clock source",
                "its clock (TIME) advanced %.1f ms while this machine's "
                "monotonic clock advanced %.1f to %.1f ms: leases on it end "
                "at another rate than their holders count",
                (double)ds / 1000, (double)lo / 1000, (double)hi / 1000);
        rl__pool_ask_free(&asks[i]);
    }
    free(asks);
    free(of);
}

/* Asks every node and judges the answers into d. */
static redislock_err examine(doctor *d, rl__env *e, int64_t clock_ms)
{
    const char *ck[3];
    size_t n = 0, i;
    node *v = nodes_of(e, ck, &n);
    rl__pool_ask *asks;
    int64_t a1, b1;

    if (v == NULL || (asks = calloc(n ? n : 1, sizeof *asks)) == NULL) {
        free(v);
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    }
    for (i = 0; i < n; i++)
        asks[i] = v[i].ask;
    a1 = rl__now_us();
    if (n > 0)
        rl__pools_ask(asks, n, 0, 0);
    b1 = rl__now_us();
    for (i = 0; i < n; i++) {
        v[i].ask = asks[i];
        judge_node(d, &v[i]);
        rl__pool_ask_free(&v[i].ask);
    }
    free(asks);
    if (clock_ms > 0)
        judge_clocks(d, v, n, clock_ms, a1, b1);
    free(v);
    return REDISLOCK_OK;
}

redislock_err redislock_doctor(redislock_client *c, int64_t clock_ms,
                               redislock_finding *out, size_t cap, size_t *n)
{
    doctor d = {0};
    redislock_err err;

    if (n != NULL)
        *n = 0;
    if (c == NULL || n == NULL || (out == NULL && cap > 0))
        return rl__err(REDISLOCK_EINVAL,
                       "redislock_doctor: NULL client, count or findings");
    if (clock_ms < 0 || clock_ms > RL_DOCTOR_CLOCK_MAX_MS)
        return rl__err(REDISLOCK_EINVAL,
                       "clock check of %lld ms: want 0 (none) to %d",
                       (long long)clock_ms, RL_DOCTOR_CLOCK_MAX_MS);
    d.env = rl__env_of(c);
    d.out = out;
    d.cap = cap;
    err = examine(&d, rl__env_of(c), clock_ms);
    *n = d.n;
    return err;
}

redislock_err rl__doctor_strict(redislock_client *c)
{
    redislock_finding f[16];
    doctor d = {0};
    redislock_err err;
    size_t i;

    d.env = rl__env_of(c);
    d.out = f;
    d.cap = sizeof f / sizeof *f;
    if ((err = examine(&d, rl__env_of(c), 0)) != REDISLOCK_OK)
        return err;
    for (i = 0; i < d.n && i < d.cap; i++)
        if (f[i].risk != REDISLOCK_RISK_UNANSWERED)
            return rl__err(REDISLOCK_ECONFIG, "strict: %s: %s: %.240s; fix: %s",
                           f[i].server, redislock_risk_name(f[i].risk),
                           f[i].what, f[i].fix);
    /* A server that answers but hides its settings cannot be vouched
     * for; one that does not answer is left to the requests. */
    if (d.unread != NULL)
        return rl__err(REDISLOCK_ECONFIG,
                       "strict: %s refused INFO, so its settings cannot be "
                       "checked; fix: allow the user INFO (+info), or turn "
                       "strict off",
                       d.unread->name);
    return REDISLOCK_OK;
}
