#include "ident.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

/* The registry key's name after the client's prefix. It contains ":rl-"
 * like the helper keys, and has no TTL, so listings skip it. */
#define RL_REGISTRY_SUFFIX "redislock:rl-server"

/* "host:port/db" or "path/db" as the URL spells it, for messages (never
 * the URL itself: it may hold a password). */
static const char *spelling(const rl__pool *p, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%d", p->name, p->url.db);
    return buf;
}

/* The length of canon without its "/db": the server, not the database. */
static size_t server_len(const char *canon)
{
    const char *slash = strrchr(canon, '/');

    return slash ? (size_t)(slash - canon) : strlen(canon);
}

/* Whether entries i and j name one server (Redlock) or one database of
 * one server (sharded) by their canonical names. */
static int same_name(const rl__idset *s, size_t i, size_t j)
{
    const char *a = s->ids[i].canon, *b = s->ids[j].canon;
    size_t n = server_len(a);

    if (s->redlock)
        return n == server_len(b) && memcmp(a, b, n) == 0;
    return strcmp(a, b) == 0;
}

/* Entry j repeats entry i: both spellings, what makes them one, the fix. */
static redislock_err repeated(const rl__idset *s, size_t i, size_t j,
                              const char *why)
{
    char a[RL_CANON_MAX], b[RL_CANON_MAX];

    return rl__err(REDISLOCK_EINVAL,
                   "server %s is listed twice: %s is the same server (%s)%s; "
                   "list each server once",
                   spelling(&s->pools[i], a, sizeof a),
                   spelling(&s->pools[j], b, sizeof b), why,
                   s->redlock ? ", and two entries of one server, whatever "
                                "their databases, are one vote, not two"
                              : "");
}

/* Two entries with one canonical name (see same_name). */
static redislock_err check_names(const rl__idset *s)
{
    char why[RL_CANON_MAX + 16];
    size_t i, j;

    for (i = 0; i < s->n; i++)
        for (j = 0; j < i; j++)
            if (same_name(s, j, i)) {
                snprintf(why, sizeof why, "both are %.*s",
                         (int)server_len(s->ids[i].canon), s->ids[i].canon);
                return repeated(s, j, i, why);
            }
    return REDISLOCK_OK;
}

/* Entry i's name before it is reached: a unix socket by its path. */
static void name_unreached(rl__idset *s, size_t i)
{
    const rl__url *u = &s->pools[i].url;
    char host[RL_CANON_MAX];

    if (u->path != NULL) {
        rl__canon_unix(s->ids[i].canon, RL_CANON_MAX, u->path, 0, u->db);
        return;
    }
    rl__canon_host(u->host, host, sizeof host);
    rl__canon_tcp(s->ids[i].canon, RL_CANON_MAX, host, u->port, u->db);
}

/*
 * An INFO server reply r: the run_id and the TCP port into *runid and
 * *tcp_port ("" and 0 when the server does not say, or refuses INFO, as
 * an ACL without +info does: the checks that need them are skipped).
 */
static void info_fields(const rl__reply *r, char *runid, long *tcp_port)
{
    char port[16];

    runid[0] = '\0';
    *tcp_port = 0;
    if (r->type == REDIS_REPLY_STRING
#ifdef REDIS_REPLY_VERB
        || r->type == REDIS_REPLY_VERB
#endif
    ) {
        if (rl__canon_info_field(r->str, r->len, "run_id", runid,
                                 RL_RUNID_MAX) != 0)
            runid[0] = '\0';
        if (rl__canon_info_field(r->str, r->len, "tcp_port", port,
                                 sizeof port) == 0)
            *tcp_port = strtol(port, NULL, 10);
    }
}

/* Other clients name entry i's server theirs (len bytes). */
static redislock_err misnamed(const rl__idset *s, size_t i, const char *theirs,
                              size_t len)
{
    char a[RL_CANON_MAX];

    return rl__err(REDISLOCK_EINVAL,
                   "other clients with this key prefix name server %s as "
                   "%.*s, this one as %s (key %.80s): they would route keys "
                   "to other servers, and two clients could hold one lock; "
                   "spell it as they do, or DEL the key once none does",
                   spelling(&s->pools[i], a, sizeof a),
                   (int)(len < 200 ? len : 200), theirs, s->ids[i].canon,
                   s->regkey);
}

/* One command of a, argv[0..argc) with its lengths. */
static void ask_one(rl__admit_ask *a, int argc, const char *const *argv,
                    const size_t *lens)
{
    int k;

    for (k = 0; k < argc; k++) {
        a->argv[a->n][k] = argv[k];
        a->lens[a->n][k] = lens[k];
    }
    a->cmds[a->n] = (rl__cmd){argc, a->argv[a->n], a->lens[a->n]};
    a->n++;
}

/* Entry i's registry key read, after its name is written there unless a
 * name is there already (when write is set). */
static void registry_ask(const rl__idset *s, size_t i, int write,
                         rl__admit_ask *a)
{
    const char *name = s->ids[i].canon;
    const char *set[4] = {"SET", s->regkey, name, "NX"};
    const char *get[2] = {"GET", s->regkey};
    size_t setl[4] = {3, s->regkeylen, strlen(name), 2};
    size_t getl[2] = {3, s->regkeylen};

    a->n = 0;
    if (write)
        ask_one(a, 4, set, setl);
    ask_one(a, 2, get, getl);
}

/* Compares entry i's name with the registry key's (the last reply of
 * registry_ask's). Another name refuses the client. Error replies (a key
 * outside the user's ACL pattern, a read-only server) skip the check. */
static redislock_err registry_judge(const rl__idset *s, size_t i,
                                    const rl__admit_ask *a, rl__reply *const *r)
{
    const char *name = s->ids[i].canon;
    const rl__reply *got = r[a->n - 1];

    if (got->type == REDIS_REPLY_STRING &&
        (got->len != strlen(name) || memcmp(got->str, name, got->len) != 0))
        return misnamed(s, i, got->str, got->len);
    return REDISLOCK_OK;
}

/* The entry a pool's admission is for. */
static rl__idset *set_of(const rl__pool *p, size_t *i)
{
    rl__idset *s = p->owner;

    *i = (size_t)(p - s->pools);
    return s;
}

static redislock_err ask_sharded(void *arg, rl__admit_ask *a)
{
    size_t i;
    const rl__idset *s = set_of(arg, &i);

    registry_ask(s, i, 1, a);
    return REDISLOCK_OK;
}

static redislock_err judge_sharded(void *arg, const rl__admit_ask *a,
                                   rl__reply *const *r)
{
    size_t i;
    const rl__idset *s = set_of(arg, &i);

    return registry_judge(s, i, a, r);
}

/* The registry on every server: read everywhere first, so that a client
 * refused by one server writes its names on none. */
static redislock_err register_all(const rl__idset *s)
{
    rl__admit_ask *a = calloc(s->n, sizeof *a);
    rl__pool_ask *q = calloc(s->n, sizeof *q);
    redislock_err err = REDISLOCK_OK;
    size_t i;
    int write, k;

    if (a == NULL || q == NULL)
        err = rl__err(REDISLOCK_ENOMEM, "out of memory");
    for (write = 0; write < 2 && err == REDISLOCK_OK; write++) {
        for (i = 0; i < s->n; i++) {
            registry_ask(s, i, write, &a[i]);
            q[i].pool = &s->pools[i];
            q[i].n = a[i].n;
            for (k = 0; k < a[i].n; k++)
                q[i].cmds[k] = a[i].cmds[k];
        }
        rl__pools_ask(q, s->n, 0, 0);
        for (i = 0; i < s->n && err == REDISLOCK_OK; i++)
            err = q[i].err != REDISLOCK_OK
                      ? rl__err(q[i].err, "%s", q[i].detail)
                      : registry_judge(s, i, &a[i], q[i].r);
        for (i = 0; i < s->n; i++)
            rl__pool_ask_free(&q[i]);
    }
    free(a);
    free(q);
    return err;
}

/* Records entry i's run_id ("": the server will not say) and marks it
 * known; 1 + the other entry with the same one (which makes i a repeat
 * for good), or 0. */
static size_t record_runid(rl__idset *s, size_t i, const char *runid)
{
    size_t j;

    for (j = 0; j < s->n && s->ids[i].dup_of == 0 && runid[0] != '\0'; j++)
        if (j != i && s->ids[j].dup_of == 0 &&
            strcmp(s->ids[j].runid, runid) == 0)
            s->ids[i].dup_of = j + 1;
    snprintf(s->ids[i].runid, RL_RUNID_MAX, "%s", runid);
    s->ids[i].known = 1;
    return s->ids[i].dup_of;
}

/* Entry i is entry j's server, by run_id. */
static redislock_err runid_repeat(const rl__idset *s, size_t i, size_t j,
                                  const char *runid)
{
    char why[64];

    snprintf(why, sizeof why, "run_id %.12s", runid);
    return repeated(s, j, i, why);
}

/* A Redlock connection reads which server it reached until one of its
 * entry's has: at construction for the servers that answer, later for
 * those that were down. An entry found to be another's server never
 * votes: its connections are refused from then on. */
static redislock_err ask_redlock(void *arg, rl__admit_ask *a)
{
    static const char *const info[2] = {"INFO", "server"};
    static const size_t lens[2] = {4, 6};
    size_t i, dup;
    rl__idset *s = set_of(arg, &i);
    char runid[RL_RUNID_MAX];
    int known;

    pthread_mutex_lock(&s->mu);
    dup = s->ids[i].dup_of;
    known = s->ids[i].known;
    snprintf(runid, sizeof runid, "%s", s->ids[i].runid);
    pthread_mutex_unlock(&s->mu);
    a->n = 0;
    if (dup)
        return runid_repeat(s, i, dup - 1, runid);
    if (!known)
        ask_one(a, 2, info, lens);
    return REDISLOCK_OK;
}

static redislock_err judge_redlock(void *arg, const rl__admit_ask *a,
                                   rl__reply *const *r)
{
    size_t i, dup;
    rl__idset *s = set_of(arg, &i);
    char runid[RL_RUNID_MAX];
    long port;

    (void)a;
    info_fields(r[0], runid, &port);
    pthread_mutex_lock(&s->mu);
    dup = s->ids[i].known ? s->ids[i].dup_of : record_runid(s, i, runid);
    snprintf(runid, sizeof runid, "%s", s->ids[i].runid);
    pthread_mutex_unlock(&s->mu);
    return dup ? runid_repeat(s, i, dup - 1, runid) : REDISLOCK_OK;
}

/* p's connections are admitted by ask and judge. */
static void admit_by(rl__pool *p, rl__idset *s,
                     redislock_err (*ask)(void *, rl__admit_ask *),
                     redislock_err (*judge)(void *, const rl__admit_ask *,
                                            rl__reply *const *))
{
    rl__admit a = {ask, judge, p};

    p->owner = s;
    rl__pool_admit_by(p, &a);
}

redislock_err rl__idset_init(rl__idset *s, rl__pool *pools, size_t n,
                             int redlock, const char *prefix, size_t plen)
{
    static const char suffix[] = RL_REGISTRY_SUFFIX;
    size_t i;

    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    s->pools = pools;
    s->n = n;
    s->redlock = redlock;
    s->ids = calloc(n, sizeof *s->ids);
    s->regkey = malloc(plen + sizeof suffix);
    if (s->ids == NULL || s->regkey == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    memcpy(s->regkey, prefix, plen);
    memcpy(s->regkey + plen, suffix, sizeof suffix);
    s->regkeylen = plen + sizeof suffix - 1;
    for (i = 0; i < n; i++) {
        name_unreached(s, i);
        pools[i].owner = s; /* which entry a pool is (set_of) */
    }
    for (i = 0; i < n && redlock; i++)
        admit_by(&pools[i], s, ask_redlock, judge_redlock);
    return check_names(s);
}

/* Sharded: every server's run_id and, for a unix socket, its name by
 * the TCP port it listens on, all asked at once. */
static redislock_err read_all(rl__idset *s)
{
    static const char *info[2] = {"INFO", "server"};
    rl__pool_ask *q = calloc(s->n, sizeof *q);
    redislock_err err = REDISLOCK_OK;
    long port;
    size_t i;

    if (q == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    for (i = 0; i < s->n; i++)
        q[i] = (rl__pool_ask){
            .pool = &s->pools[i], .n = 1, .cmds = {{2, info, NULL}}};
    rl__pools_ask(q, s->n, 0, 0);
    for (i = 0; i < s->n && err == REDISLOCK_OK; i++) {
        if (q[i].err != REDISLOCK_OK) {
            err = rl__err(q[i].err, "%s", q[i].detail);
            break;
        }
        info_fields(q[i].r[0], s->ids[i].runid, &port);
        if (s->pools[i].url.path != NULL)
            rl__canon_unix(s->ids[i].canon, RL_CANON_MAX, s->pools[i].url.path,
                           port, s->pools[i].url.db);
    }
    for (i = 0; i < s->n; i++)
        rl__pool_ask_free(&q[i]);
    free(q);
    return err;
}

/* Sharded: one database of one server twice, by run_id. */
static redislock_err check_runids(const rl__idset *s)
{
    size_t i, j;

    for (i = 0; i < s->n; i++)
        for (j = 0; j < i; j++)
            if (s->ids[i].runid[0] != '\0' &&
                strcmp(s->ids[i].runid, s->ids[j].runid) == 0 &&
                s->pools[i].url.db == s->pools[j].url.db)
                return runid_repeat(s, i, j, s->ids[i].runid);
    return REDISLOCK_OK;
}

/* Sharded: names final, no server twice, the registry agrees; then
 * new connections keep the registry written. */
static redislock_err check_sharded(rl__idset *s)
{
    redislock_err err;
    size_t i;

    if ((err = read_all(s)) != REDISLOCK_OK ||
        (err = check_names(s)) != REDISLOCK_OK ||
        (err = check_runids(s)) != REDISLOCK_OK ||
        (err = register_all(s)) != REDISLOCK_OK)
        return err;
    for (i = 0; i < s->n; i++)
        admit_by(&s->pools[i], s, ask_sharded, judge_sharded);
    return REDISLOCK_OK;
}

redislock_err rl__idset_lazy(rl__idset *s)
{
    size_t i;

    if (s->redlock)
        return REDISLOCK_OK;
    for (i = 0; i < s->n; i++)
        if (s->pools[i].url.path != NULL)
            return rl__err(REDISLOCK_EINVAL,
                           "%s: a sharded client names a server on a unix "
                           "socket by the TCP port it listens on, which "
                           "only the server can say: with lazy_connect, "
                           "give its host:port, or turn lazy_connect off",
                           s->pools[i].name);
    for (i = 0; i < s->n; i++)
        admit_by(&s->pools[i], s, ask_sharded, judge_sharded);
    return REDISLOCK_OK;
}

redislock_err rl__idset_check(rl__idset *s)
{
    size_t i, dup = 0;
    char runid[RL_RUNID_MAX] = "";

    if (!s->redlock)
        return check_sharded(s);
    /* The servers that answered were checked as they connected. */
    pthread_mutex_lock(&s->mu);
    for (i = 0; i < s->n && dup == 0; i++)
        if ((dup = s->ids[i].dup_of) != 0)
            snprintf(runid, sizeof runid, "%s", s->ids[i].runid);
    pthread_mutex_unlock(&s->mu);
    return dup ? runid_repeat(s, i - 1, dup - 1, runid) : REDISLOCK_OK;
}

const char *rl__idset_name(const rl__idset *s, size_t i)
{
    return s->ids[i].canon;
}

void rl__idset_fini(rl__idset *s)
{
    free(s->ids);
    free(s->regkey);
    pthread_mutex_destroy(&s->mu);
    memset(s, 0, sizeof *s);
}
